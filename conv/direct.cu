// The direct path's kernels and launcher (direct.hpp). One block per output tile of one output
// plane: load (tile_h + kh - 1) x (tile_w + kw - 1) extended input pixels into shared memory as
// float (boundary rule and pixel conversion in the loader), then every thread sums its
// rows_per_thread x 4 outputs from float4 reads of shared rows and stores them (rounded and
// saturated for narrow pixels, float4 / 4-pixel stores where the row allows).
//
// Index map (semantics.hpp): out(y, x) = sum k(i, j) in_ext(y + oy - i, x + ox - j). Shared row r,
// column c of the tile at outputs (y0, x0) hold in_ext(y0 + oy - (kh-1) + r, x0 + ox - (kw-1) + c),
// so output (y0 + ty R + a, x0 + tx 4 + c) reads shared row ty R + a + (kh-1) - i and column
// tx 4 + c + u with u = kw-1-j: a thread's register window over shared row rr = ty R + s serves
// tap row i = a + kh - 1 - s of its output row a, and window element c + u serves tap column
// kw-1-u of output column c.
#include "direct.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "../fft/device/cuda_check.hpp"
#include "../fft/device/shared_limit.hpp"
#include "direct_mma.cuh"
#include "pixel.cuh"
#include "ptx_version.hpp"
#include "window_tile.cuh"
#include "window_walks.cuh"

// Threads of a block where a plane's height takes several blocks. 128 measured on the H100
// (docs/benchmarks.md, session 26): back to back 1-6% faster at K <= 7, 8-14% slower at K = 11;
// timed alone within 2%. A measurement knob.
#ifndef GPUCONV_DIRECT_TILE_THREADS
#define GPUCONV_DIRECT_TILE_THREADS 256
#endif

namespace gpuconv::conv {

namespace {

// Registers a thread may use. The unrolled walks of 8 rows up to 7 x 7 taps get 64: four blocks
// of 256 threads a multiprocessor where 72-80 registers allowed three (uint8 at K = 3..7, fp32
// at K = 7), with no spills but 6 / 56 bytes of spill store / load in the uint8 K = 3 walk. H100,
// `gpuconv-bench conv --sizes 3,5,7`, two rounds each, Gpix/s (back to back in brackets): uint8
// 4096^2 K = 3 442-460 (501-502) -> 461-487 (523-530), K = 5 359-378 (398-401) -> 381-391
// (419-424), K = 7 277-281 (301-302) -> 292 (313); fp32 1024 x 64^2 K = 7 138-141 (164) -> 154
// (176); fp32 4096^2 unchanged. Capping at 48 (five blocks) or 40 (six) spilled more and lost
// 1-23% at K = 3. Otherwise 65536 / max_threads (what __launch_bounds__(max_threads, 1) gives).
template <walk W, int K, int R>
constexpr int window_registers() {
  return W == walk::unrolled && K <= 7 && R == 8 ? 64 : 65536 / window_policy::max_threads;
}

// The kernel-level entry: the two phases of window_walks.cuh around the barrier.
template <walk W, int K, int R, typename in_t, typename out_t>
__global__ void __launch_bounds__(window_policy::max_threads) __maxnreg__((window_registers<W, K, R>()))
    window_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const window_map m, const int kh, const int kw,
                  const fixed_taps<K * K> taps, const float* __restrict__ padded, const divider tiles_x,
                  const divider tiles_per_plane, const int stride, const int taps_floats, const bool vector_store) {
  extern __shared__ float4 shared_raw[];
  const window_args a{m, kh, kw, padded, tiles_x, tiles_per_plane, stride, taps_floats, vector_store};
  window_load<W, R>(in, a, reinterpret_cast<float*>(shared_raw));
  wait_copies();
  __syncthreads();
  window_sum<W, K, R>(out, a, taps, reinterpret_cast<const float*>(shared_raw));
}

std::size_t shape_bytes(const window_shape& s, int kh) {
  return (std::size_t(s.taps_floats) + std::size_t(s.ty * s.rows + kh - 1) * s.stride) * 4;
}

template <typename F>
void dispatch_unrolled(int k, F&& f) {
  switch (k) {
    case 3: f(std::integral_constant<int, 3>{}); return;
    case 5: f(std::integral_constant<int, 5>{}); return;
    case 7: f(std::integral_constant<int, 7>{}); return;
    case 9: f(std::integral_constant<int, 9>{}); return;
    case 11: f(std::integral_constant<int, 11>{}); return;
    default: throw std::invalid_argument("direct_tiles: no unrolled walk for kernel side " + std::to_string(k));
  }
}

}  // namespace

window_shape window_shape_for(long long out_h, long long out_w, int kh, int kw, int rows) {
  if (rows != 8 && rows != 4 && rows != 2)
    throw std::invalid_argument("window_shape_for: " + std::to_string(rows) + " rows a thread (8, 4 or 2)");
  const int R = rows;
  constexpr int C = window_policy::columns_per_thread;
  window_shape s;
  s.rows = R;
  s.tx = out_w > 64 ? 32 : out_w > 32 ? 16 : 8;
  s.tile_w = s.tx * C;
  s.stride = s.tile_w + round4(kw) + 4;
  s.taps_floats = kh * round4(kw);
  const long long need = std::max<long long>(1, (out_h + R - 1) / R);
  s.ty = (int)std::min<long long>(need, GPUCONV_DIRECT_TILE_THREADS / s.tx);
  if (need <= window_policy::max_threads / s.tx) s.ty = (int)need;  // one block holds the plane's height
  for (; s.ty >= 1; --s.ty)
    if (shape_bytes(s, kh) <= (std::size_t)window_policy::max_shared_bytes) break;
  if (s.ty < 1)
    throw std::invalid_argument("direct path: a " + std::to_string(kh) + " x " + std::to_string(kw) +
                                " kernel's shared tile exceeds " + std::to_string(window_policy::max_shared_bytes) +
                                " bytes");
  s.tile_h = s.ty * R;
  s.tiles_y = (out_h + s.tile_h - 1) / s.tile_h;
  s.tiles_x = (out_w + s.tile_w - 1) / s.tile_w;
  s.shared_bytes = shape_bytes(s, kh);
  return s;
}

namespace {
int rows_from_environment() {
  const char* e = std::getenv("GPUCONV_DIRECT_ROWS");
  const int r = e ? std::atoi(e) : 0;
  return r == 8 || r == 4 || r == 2 ? r : 0;
}
std::atomic<int> forced_rows{rows_from_environment()};

int mma_from_environment() {
  const char* e = std::getenv("GPUCONV_DIRECT_MMA");
  const int v = e ? std::atoi(e) : 1;
  return v == 0 || v == 2 ? v : 1;
}
std::atomic<int> mma_mode{mma_from_environment()};
}  // namespace

void force_mma_walk(int mode) {
  if (mode < 0 || mode > 2) throw std::invalid_argument("force_mma_walk: " + std::to_string(mode) + " (0, 1 or 2)");
  mma_mode = mode;
}

bool mma_walk_fits(int kh, int kw, int ox) {
  constexpr int k = mma_walk_policy::max_k;
  return kh >= 1 && kw >= 1 && kh <= k && kw <= k && kw + mma_shift(ox, kw) <= k;
}

bool mma_walk_applies(int kh, int kw, const window_map& m) {
  const int mode = mma_mode.load();
  if (mode == 0 || !mma_walk_fits(kh, kw, m.ox)) return false;
  return mode == 2 || (m.out_w >= mma_walk_min_width && (long long)kh * kw >= mma_walk_min_taps);
}

float mma_walk_scale(const float* taps, int n) {
  float largest = 0.f;
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite(taps[i])) return 0.f;
    largest = std::max(largest, std::fabs(taps[i]));
  }
  if (largest == 0.f) return 1.f;
  if (largest >= 1048576.f) return 0.f;  // 2^20
  int e = 0;
  std::frexp(largest, &e);  // largest in [2^(e-1), 2^e)
  return std::clamp(std::ldexp(1.f, 11 - e), mma_walk_min_scale, mma_walk_max_scale);  // (inf for tiny taps: clamped)
}

void force_window_rows(int rows) {
  if (rows != 0 && rows != 8 && rows != 4 && rows != 2)
    throw std::invalid_argument("force_window_rows: " + std::to_string(rows) + " (8, 4, 2 or 0)");
  forced_rows = rows;
}

int window_rows_for(long long out_h, long long out_w, int kh, int kw, long long planes, int sms) {
  if (const int forced = forced_rows.load()) return forced;
  for (int rows : {8, 4}) {
    const window_shape s = window_shape_for(out_h, out_w, kh, kw, rows);
    if ((double)planes * s.tiles_y * s.tiles_x * s.tx * s.ty >= 512.0 * std::max(sms, 1)) return rows;
  }
  return 2;
}

bool direct_tiles::supports(int kh, int kw) {
  if (kh < 1 || kw < 1 || kh > 4096 || kw > 4096) return false;
  try {
    window_shape_for(1 << 20, 1 << 20, kh, kw);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

std::vector<float> padded_taps(const float* kernels, int count, int kh, int kw) {
  const int kw4 = round4(kw);
  std::vector<float> padded(std::size_t(count) * kh * kw4, 0.f);
  for (int k = 0; k < count; ++k)
    for (int i = 0; i < kh; ++i)
      for (int u = 0; u < kw; ++u)
        padded[(std::size_t(k) * kh + i) * kw4 + u] = kernels[(std::size_t(k) * kh + i) * kw + kw - 1 - u];
  return padded;
}

direct_tiles::direct_tiles(const std::vector<float>& kernels, int count, int kh, int kw)
    : count_(count), kh_(kh), kw_(kw), host_(kernels) {
  if (!supports(kh, kw))
    throw std::invalid_argument("direct_tiles: a " + std::to_string(kh) + " x " + std::to_string(kw) +
                                " kernel does not fit the shared tile");
  if (count < 1 || kernels.size() != std::size_t(count) * kh * kw)
    throw std::invalid_argument("direct_tiles: " + std::to_string(kernels.size()) + " kernel values for " +
                                std::to_string(count) + " kernels of " + std::to_string(kh) + " x " + std::to_string(kw));
  int device = 0;
  GPUCONV_CUDA(cudaGetDevice(&device));
  GPUCONV_CUDA(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device));
  int major = 0;
  GPUCONV_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  // (and the kernels compiled for sm_80 or later: built for older targets only, the walk's body is
  // empty; asked of a probe kernel, ptx_version.hpp, not of the walk's, which that would load)
  tensor_cores_ = major >= 8 && library_ptx_version() >= 80;
  for (int k = 0; k < count; ++k) scales_.push_back(mma_walk_scale(kernels.data() + std::size_t(k) * kh * kw, kh * kw));
  const std::vector<float> padded = padded_taps(kernels.data(), count, kh, kw);
  padded_ = device_buffer<float>(padded.size());
  upload(padded_.data(), padded.data(), padded_.bytes());
  if (tensor_cores_ && kh <= mma_walk_policy::max_k && kw <= mma_walk_policy::max_k) {
    const std::size_t table = std::size_t(kh) * 32 * 4;  // words a kernel and shift
    std::vector<std::uint32_t> tables(std::size_t(count) * 4 * table);
    for (int k = 0; k < count; ++k)
      for (int sh = 0; sh < 4; ++sh)
        mma_tap_table(padded.data() + std::size_t(k) * kh * round4(kw), kh, kw, sh, scales_[k],
                      tables.data() + (std::size_t(k) * 4 + sh) * table);
    mma_tables_ = device_buffer<std::uint32_t>(tables.size());
    upload(mma_tables_.data(), tables.data(), mma_tables_.bytes());
  }
}

const float* direct_tiles::padded(int k) const { return padded_.data() + std::size_t(k) * kh_ * round4(kw_); }

template <typename in_t, typename out_t>
void direct_tiles::run(const in_t* in, out_t* out, const window_map& m, int kernel, cudaStream_t stream) const {
  if (kernel < 0 || kernel >= count_)
    throw std::invalid_argument("direct_tiles::run: kernel " + std::to_string(kernel) + " of a bank of " +
                                std::to_string(count_));
  if constexpr (std::is_same_v<in_t, std::uint8_t> && std::is_same_v<out_t, std::uint8_t>) {
    if (tensor_cores_ && scales_[kernel] > 0.f && mma_walk_applies(kh_, kw_, m))
      return run_mma(in, out, m, kernel, stream);
  }
  // the separable path's passes between pixel types keep 8 rows a thread (fewer instantiations)
  const int rows = std::is_same_v<in_t, out_t> ? window_rows_for(m.out_h, m.out_w, kh_, kw_, m.planes, sms_)
                                               : window_policy::rows_per_thread;
  const window_shape s = window_shape_for(m.out_h, m.out_w, kh_, kw_, rows);
  const long long blocks = m.planes * s.tiles_y * s.tiles_x;
  if (blocks < 1) return;
  if (blocks >= (1LL << 31))
    throw std::invalid_argument("direct_tiles::run: " + std::to_string(blocks) + " blocks in one launch (at most 2^31 - 1)");
  const bool vector_store =
      m.out_w % 4 == 0 && reinterpret_cast<std::uintptr_t>(out) % (4 * sizeof(out_t)) == 0;
  const float* padded = this->padded(kernel);
  const dim3 block(s.tx, s.ty);
  auto launch = [&](auto* fn, const auto& taps) {
    allow_dynamic_shared(fn, s.shared_bytes);
    fn<<<(unsigned)blocks, block, s.shared_bytes, stream>>>(in, out, m, kh_, kw_, taps, padded, divider(s.tiles_x),
                                                           divider(s.tiles_y * s.tiles_x), s.stride, s.taps_floats,
                                                           vector_store);
    check_launch("window_kernel");
  };
  auto walks = [&](auto r) {
    constexpr int R = decltype(r)::value;
    if (std::is_same_v<in_t, out_t> && direct_unrolled(kh_, kw_)) {  // (the separable passes are never square)
      if constexpr (std::is_same_v<in_t, out_t>) dispatch_unrolled(kh_, [&](auto side) {
        constexpr int K = decltype(side)::value;
        fixed_taps<K * K> taps;
        std::copy_n(host_.data() + std::size_t(kernel) * K * K, K * K, taps.v);
        launch(&window_kernel<walk::unrolled, K, R, in_t, out_t>, taps);
      });
    } else if (kw_ == 1) {
      launch(&window_kernel<walk::column, 1, R, in_t, out_t>, fixed_taps<1>{});
    } else if (kh_ == 1) {
      launch(&window_kernel<walk::row, 1, R, in_t, out_t>, fixed_taps<1>{});
    } else {
      launch(&window_kernel<walk::generic, 1, R, in_t, out_t>, fixed_taps<1>{});
    }
  };
  if constexpr (std::is_same_v<in_t, out_t>) {
    if (rows == 2) return walks(std::integral_constant<int, 2>{});
    if (rows == 4) return walks(std::integral_constant<int, 4>{});
  }
  walks(std::integral_constant<int, window_policy::rows_per_thread>{});
}

namespace {
// a float as the fp16 pair (v, v) (exact for the powers of two of the walk's window factor)
unsigned window_pair(float v) { return unsigned(half_bits(v)) * 0x10001u; }
}  // namespace

void direct_tiles::run_mma(const std::uint8_t* in, std::uint8_t* out, const window_map& m, int kernel,
                           cudaStream_t stream) const {
  using P = mma_walk_policy;
  const long long tiles_y = (m.out_h + P::tile_h - 1) / P::tile_h, tiles_x = (m.out_w + P::tile_w - 1) / P::tile_w;
  const long long blocks = m.planes * tiles_y * tiles_x;
  if (blocks < 1) return;
  if (blocks >= (1LL << 31))
    throw std::invalid_argument("direct_tiles::run: " + std::to_string(blocks) + " blocks in one launch (at most 2^31 - 1)");
  const int sh = mma_shift(m.ox, kw_);
  mma_walk_args a{m,
                  kh_,
                  kw_,
                  sh,
                  reinterpret_cast<const uint4*>(mma_tables_.data() + (std::size_t(kernel) * 4 + sh) * kh_ * 32 * 4),
                  window_pair(1.f / scales_[kernel]),
                  window_pair(-1024.f / scales_[kernel]),
                  divider(tiles_x),
                  divider(tiles_y * tiles_x),
                  m.out_w % 16 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0,
                  m.width % 4 == 0 && reinterpret_cast<std::uintptr_t>(in) % 4 == 0};
  const std::size_t shared = std::size_t(P::max_k) * 32 * 16 + std::size_t(P::tile_h + kh_ - 1) * P::window_w * 2;
  auto* fn = &mma_window_kernel<P>;
  allow_dynamic_shared(fn, shared);
  fn<<<(unsigned)blocks, P::threads, shared, stream>>>(in, out, a);
  check_launch("mma_window_kernel");
}

#define GPUCONV_DIRECT_RUN(in_t, out_t) \
  template void direct_tiles::run<in_t, out_t>(const in_t*, out_t*, const window_map&, int, cudaStream_t) const;
GPUCONV_DIRECT_RUN(float, float)
GPUCONV_DIRECT_RUN(std::uint8_t, std::uint8_t)
GPUCONV_DIRECT_RUN(std::uint16_t, std::uint16_t)
// the separable path's passes: narrow pixels into the float intermediate, and back
GPUCONV_DIRECT_RUN(std::uint8_t, float)
GPUCONV_DIRECT_RUN(std::uint16_t, float)
GPUCONV_DIRECT_RUN(float, std::uint8_t)
GPUCONV_DIRECT_RUN(float, std::uint16_t)
#undef GPUCONV_DIRECT_RUN

}  // namespace gpuconv::conv
