// The direct path's host side (direct.hpp): tile shapes, the walk and row choices, the tap tables.
// Its kernels and their launcher are in direct_walks.cuh, instantiated in the direct_run_*.cu
// files, one CUDA module per pixel type.
#include "direct.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "../fft/device/cuda_check.hpp"
#include "direct_mma.cuh"
#include "ptx_version.hpp"

// Threads of a block where a plane's height takes several blocks. 128 measured on the H100
// (docs/benchmarks.md, session 26): back to back 1-6% faster at K <= 7, 8-14% slower at K = 11;
// timed alone within 2%. A measurement knob.
#ifndef GPUCONV_DIRECT_TILE_THREADS
#define GPUCONV_DIRECT_TILE_THREADS 256
#endif

namespace gpuconv::conv {

namespace {

std::size_t shape_bytes(const window_shape& s, int kh) {
  return (std::size_t(s.taps_floats) + std::size_t(s.ty * s.rows + kh - 1) * s.stride) * 4;
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
  const long long taps = (long long)kh * kw;
  return mode == 2 || (m.out_w >= mma_walk_min_width &&
                       (taps >= mma_walk_min_taps || (taps >= mma_walk_min_square_taps && std::min(kh, kw) >= 3)));
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

int separable_pass_rows_for() {
  const int forced = forced_rows.load();
  return forced ? forced : separable_pass_rows;
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

}  // namespace gpuconv::conv
