// plan3d's separable method on the CUDA backend (separable3d.hpp): the three passes over
// [outer][n][inner] arrays (rows: inner 1; columns: inner out_w; slices: inner out_h * out_w),
// a thread per 16 (rows: 8) outputs along the axis, the taps as many at a time: the
// column and slice passes (axis_taps_kernel) read their windows straight from global memory,
// coalesced across i, the boundary rule looked up only where a window leaves the array; the
// row pass (row_taps_kernel) stages each row segment's window in shared memory. Both carry a
// chunk's window values into the next chunk in registers and keep index arithmetic in 32 bits
// where they can: their limit is the instruction issue rate, not the bytes. H100, 128 x 512 x
// 512 fp32, K = 31 (ncu at its locked clocks): rows 168 us (114 M warp instructions), columns
// 154 (71 M), against 216 / 196 (156 M / 106 M) before (docs/benchmarks.md, Volumes, session 20).
// The last pass can take one of Richardson-Lucy's elementwise steps into its store
// (backend3d.hpp's store_step).
//
// Whole batch when the intermediates fit the memory cap; else bands of output slices per
// volume, each from a slab of extended input slices (make_band) uploaded from the host or
// copied on the device, the outside value filled in, and the slice pass then reads the slab
// without a boundary.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "device_scope.hpp"
#include "fft/device/buffer.hpp"
#include "host_staging.hpp"
#include "pixel.cuh"
#include "rl_steps.hpp"
#include "separable3d.hpp"
#include "separable3d_walk.cuh"
#include "window_tile.cuh"

namespace gpuconv::conv {

namespace {

constexpr int taps_block = 256;

// What the last pass stores: the sum (rounded and saturated for narrow voxels), or a
// store_step's elementwise function of it (backend3d.hpp; float only), chosen at compile time.
enum class store_kind { plain, ratio, update };

// The flat index of axis_taps_kernel (o, i / width, y0 / rows, i % width): its sizes, from the
// host (64-bit divisions cost a warp of 512 outputs ~5% of its instructions).
struct axis_walk {
  long long per_range, per_outer, count;  // blocks * width, ranges * per_range, outer * per_outer
  static axis_walk of(long long outer, int n_dst, long long inner, int width, int rows) {
    const long long blocks = (n_dst + rows - 1) / rows, ranges = (inner + width - 1) / width;
    return {blocks * width, ranges * blocks * width, outer * ranges * blocks * width};
  }
};

// dst[o][y][i] = sum_{l < K} taps[l] * src_ext[o][y + off - l][i] for o < outer, y < n_dst,
// i < inner; src_ext along the axis: border_index(y + off - l, n_src, b), `outside` where it
// is < 0. Each thread sums `rows` consecutive outputs y0 .. y0 + rows - 1 at one (o, i)
// (window_sums), the threads of a block on consecutive i (coalesced).
template <int rows, typename idx_t, typename in_t, typename out_t, store_kind sk = store_kind::plain>
__global__ void __launch_bounds__(taps_block, 2)  // <= 128 registers: two blocks a multiprocessor
axis_taps_kernel(const in_t* __restrict__ src, out_t* __restrict__ dst, long long outer, int n_src, int n_dst,
                 long long inner, int width, axis_walk walk, int off, boundary b, float outside,
                 const float* __restrict__ taps, int K, store_step st) {
  static_assert(sk == store_kind::plain || std::is_same_v<out_t, float>, "the RL steps store floats");
  float eps = 0.f;  // as deconvolve.cu's ratio_kernel: epsilon * max(y), one float multiply
  if constexpr (sk == store_kind::ratio) eps = st.epsilon * __ldg(st.max_y);
  // a step's operands, copied (cp.async) into the thread's own slots before its sums and read
  // after them: their loads overlap the sums without holding registers (loaded after the sums,
  // they cost H100 ~100 us of the slice pass's 235 at 128 x 512 x 512)
  __shared__ float staged[sk == store_kind::plain ? 1 : rows * taps_block];
  // one flat index over (o, i / width, y0 / rows, i % width), width = `width` columns (a block's
  // worth where inner allows): the blocks of one column range follow each other down the axis,
  // so that the rows their windows share are read while they are still in L2
  const long long per_range = walk.per_range, per_outer = walk.per_outer, count = walk.count;
  const bool narrow = count <= 0xffffffffLL;  // 32-bit divisions
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count; e += (long long)gridDim.x * blockDim.x) {
    long long o, ic, yb, i;
    if (narrow) {
      const unsigned ue = (unsigned)e, uo = ue / (unsigned)per_outer, ur = ue - uo * (unsigned)per_outer;
      const unsigned uc = ur / (unsigned)per_range, uw = ur - uc * (unsigned)per_range, uy = uw / (unsigned)width;
      o = uo, ic = uc, yb = uy, i = (long long)uc * width + (uw - uy * (unsigned)width);
    } else {
      o = e / per_outer;
      const long long r = e - o * per_outer, w = r % per_range;
      ic = r / per_range, yb = w / width, i = ic * width + w % width;
    }
    if (i < inner) {
      const in_t* s = src + o * n_src * inner;
      out_t* d = dst + o * (long long)n_dst * inner;
      const long long y0 = yb * rows, top = y0 + off;  // output y0 + r reads rows top + r - l
      if constexpr (sk != store_kind::plain) {
        const float* a = st.aux + (o * (long long)n_dst + y0) * inner + i;
#pragma unroll
        for (int r = 0; r < rows; ++r, a += inner)
          if (y0 + r < n_dst) copy_pixel(&staged[r * taps_block + threadIdx.x], a);
      }
      float acc[rows];
#pragma unroll
      for (int r = 0; r < rows; ++r) acc[r] = 0.f;
      const bool edge = !(top - (K - 1) >= 0 && top + rows - 1 < n_src);
      window_sums<rows, idx_t>(s + i, idx_t(inner), top, K, n_src, b, outside, edge, taps, acc);
      if constexpr (sk != store_kind::plain) {
        wait_copies();  // this thread's own copies: no barrier
#pragma unroll
        for (int r = 0; r < rows; ++r) {
          const float v = staged[r * taps_block + threadIdx.x];  // rows past n_dst: not stored below
          if constexpr (sk == store_kind::ratio)
            acc[r] = rl::ratio(v, acc[r], eps);
          else
            acc[r] = rl::next(v, acc[r], 1.f);
        }
      }
      out_t* q = d + y0 * inner + i;
#pragma unroll
      for (int r = 0; r < rows; ++r, q += inner)
        if (y0 + r < n_dst) *q = store_pixel<out_t>(acc[r]);
    }
  }
}

// The row pass (inner 1): dst[o][x] = sum_{l < K} taps[l] * src_ext[o][x + off - l]. A block of
// row_block threads takes `per` rows at a time, `lanes` = row_block / per threads a row, each
// thread `rows` consecutive outputs of a segment of lanes * rows; the segment's source window
// (seg + K - 1 values, the boundary rule applied) is staged in shared memory with coalesced
// loads. Window value v sits at slot(v + lead): four padding slots after every 32 keep the
// threads' 16-byte reads (rows = 8 values apart) on distinct banks, and lead (8 to 11) makes
// each chunk's 2 rows - 1 values start on a 16-byte boundary, so that a chunk reads them as
// four float4s. The sums as axis_taps_kernel's (taps in order, chunks of `rows`).
constexpr int row_block = 128;


// A window value outside the source row: the boundary rule's column, or `outside`.
template <typename in_t>
__device__ __noinline__ float halo_value(const in_t* __restrict__ s, int c, int n_src, boundary b, float outside) {
  const int r = border_index(c, n_src, b);
  return r < 0 ? outside : float(s[r]);
}

// Instructions: 32-bit index arithmetic (a row's offset in 64 bits once per group), the
// boundary rule only for window values outside the row (halo_value), and each chunk after the
// first reading the 8 values it does not share with the chunk before (its top 7 are that one's
// first 7, moved in registers). (At most 48 registers, ten blocks a multiprocessor.)
template <int rows, typename in_t>
__global__ void __launch_bounds__(row_block, 10)
row_taps_kernel(const in_t* __restrict__ src, float* __restrict__ dst, long long outer, long long groups, int n_src,
                int n_dst, int off, boundary b, float outside, const float* __restrict__ taps, int K, int lanes) {
  static_assert(rows == 8, "a chunk's 15 values as four float4s");
  extern __shared__ float4 window4[];
  const int per = row_block / lanes, seg = lanes * rows;
  const int sub = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  float* w = reinterpret_cast<float*>(window4) + sub * window_floats(seg, K);
  // chunk l0 of the thread at base reads values first = base + K - 1 - l0 - (rows - 1) ..: lead
  // puts first + lead on a multiple of 4 (base and l0 are multiples of 8) and above 0
  const int lead = 8 + ((4 - ((K - rows) & 3)) & 3);
  const int nseg = (n_dst + seg - 1) / seg;  // groups = ceil(outer / per) * nseg, from the host
  const bool narrow = groups <= 0xffffffffLL;  // 32-bit divisions
  for (long long g = blockIdx.x; g < groups; g += gridDim.x) {
    long long o;
    int x0;
    if (narrow) {
      const unsigned ug = unsigned(g), q = ug / unsigned(nseg);
      o = (long long)q * per + sub;
      x0 = int(ug - q * unsigned(nseg)) * seg;
    } else {
      o = (g / nseg) * per + sub;
      x0 = int(g % nseg) * seg;
    }
    const bool live = o < outer;
    const in_t* s = src + (live ? o : 0) * n_src;
    const int span = min(seg, n_dst - x0) + K - 1;
    __syncthreads();  // the last segment's reads are done
    const int from = x0 + off - (K - 1);  // the window's first source column
    if (live) {
      // the values inside the row [lo, hi), a thread's `batch` at a time, all loaded before any
      // is stored: its loads in flight together rather than one global round trip per value
      // (rows + (K - 1) / lanes values a thread: 9 at K = 31 on 512-wide rows, one batch up to
      // K = lanes + 1); then the few outside it through the boundary rule
      constexpr int batch = rows + 1;
      const int lo = max(0, -from), hi = min(span, n_src - from);
      const in_t* row = s + from;
      for (int v0 = lo + lane; v0 < hi; v0 += batch * lanes) {
        float val[batch];
        const in_t* p = row + v0;
#pragma unroll
        for (int q = 0; q < batch; ++q, p += lanes)
          if (v0 + q * lanes < hi) val[q] = float(*p);
#pragma unroll
        for (int q = 0; q < batch; ++q)
          if (v0 + q * lanes < hi) w[window_slot(v0 + q * lanes + lead)] = val[q];
      }
      for (int v = lane; v < lo; v += lanes) w[window_slot(v + lead)] = halo_value(s, from + v, n_src, b, outside);
      for (int v = max(lo, hi) + lane; v < span; v += lanes)
        w[window_slot(v + lead)] = halo_value(s, from + v, n_src, b, outside);
    }
    __syncthreads();
    const int base = lane * rows;  // output x0 + base + r reads value base + r - l + K - 1
    if (!live || x0 + base >= n_dst) continue;
    float acc[rows];
    row_window_sums<rows>(w, base, K, lead, taps, acc);
    float* d = dst + o * n_dst + x0 + base;
    if (x0 + base + rows <= n_dst && (reinterpret_cast<std::uintptr_t>(d) & 15) == 0) {
#pragma unroll
      for (int h = 0; h < rows / 4; ++h)
        reinterpret_cast<float4*>(d)[h] = make_float4(acc[4 * h], acc[4 * h + 1], acc[4 * h + 2], acc[4 * h + 3]);
    } else {
#pragma unroll
      for (int r = 0; r < rows; ++r)
        if (x0 + base + r < n_dst) d[r] = acc[r];
    }
  }
}

template <typename T>
__global__ void fill_kernel(T* __restrict__ p, long long n, T v) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x)
    p[e] = v;
}

// Outputs a thread along the axis. H100, 128 x 512 x 512, K = 31 (ncu, before session 20's
// register carry): the column and slice passes 241 / 285 us at 8 a thread (15 loads per 64
// multiply-adds, <= 80 registers), 196 / 235 at 16 (31 per 256, ~125); the row pass 258 us at 8,
// 341 at 16 with its window loaded one value at a time, 219 at 8 and 231 at 16 with the loads
// batched.
constexpr int taps_rows_per_thread = 8;   // the row pass
constexpr int axis_rows_per_thread = 16;  // the column and slice passes
constexpr int taps_padding = 16;          // the taps table's chunks: a multiple of both

// taps: the axis's taps in the padded table (zeros up to a whole chunk). sk, st: the store
// (a step only on axis_taps_kernel, whatever inner is; st's operands, sk its kind).
template <store_kind sk = store_kind::plain, typename in_t, typename out_t>
void axis_taps(const in_t* src, out_t* dst, long long outer, int n_src, int n_dst, long long inner, int off, boundary b,
               float outside, const float* taps, int K, cudaStream_t stream, store_step st = {}) {
  constexpr int rows = taps_rows_per_thread;
  if constexpr (std::is_same_v<out_t, float> && sk == store_kind::plain) {
    // rows: staged in shared memory (its window up to 48 KB: K up to ~10000)
    const int lanes = n_dst > 64 * rows ? 128 : n_dst > 32 * rows ? 64 : 32, per = row_block / lanes;
    const std::size_t smem = std::size_t(per) * window_floats(lanes * rows, K) * sizeof(float);
    if (inner == 1 && smem <= 48 * 1024) {
      const long long groups = (outer + per - 1) / per * ((n_dst + lanes * rows - 1) / (lanes * rows));
      const unsigned x = (unsigned)std::clamp<long long>(groups, 1, 1 << 22);
      row_taps_kernel<rows, in_t><<<x, row_block, smem, stream>>>(src, dst, outer, groups, n_src, n_dst, off, b,
                                                                  outside, taps, K, lanes);
      check_launch("row_taps_kernel");
      return;
    }
  }
  constexpr int axis_rows = axis_rows_per_thread;
  // column ranges of a block's threads, or of whole warps where inner is narrower
  const int width = inner >= taps_block ? taps_block : int((inner + 31) / 32 * 32);
  const axis_walk walk = axis_walk::of(outer, n_dst, inner, width, axis_rows);
  const unsigned x = (unsigned)std::clamp<long long>((walk.count + taps_block - 1) / taps_block, 1, 1 << 22);
  if ((long long)n_src * inner <= 0x7fffffffLL)  // a column's offsets in 32 bits
    axis_taps_kernel<axis_rows, int, in_t, out_t, sk><<<x, taps_block, 0, stream>>>(
        src, dst, outer, n_src, n_dst, inner, width, walk, off, b, outside, taps, K, st);
  else
    axis_taps_kernel<axis_rows, long long, in_t, out_t, sk><<<x, taps_block, 0, stream>>>(
        src, dst, outer, n_src, n_dst, inner, width, walk, off, b, outside, taps, K, st);
  check_launch("axis_taps_kernel");
}

class cuda3d_separable final : public plan3d::impl {
 public:
  cuda3d_separable(problem3d p, rank1_3d_factors f) : impl(std::move(p)), f_(std::move(f)) {
    GPUCONV_CUDA(cudaGetDevice(&device_));
    if (prob.options.cuda_device >= 0) device_ = prob.options.cuda_device;
    device_scope on(device_);
    std::size_t free_bytes = 0, total_bytes = 0;
    GPUCONV_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    cap_ = prob.options.memory_limit ? prob.options.memory_limit : free_bytes / 2;
    // each axis's taps from a multiple of taps_padding floats (16-byte aligned), zeros
    // up to the next: the kernels read whole chunks
    std::vector<float> taps;
    for (const auto* v : {&f_.depth, &f_.column, &f_.row}) {
      offsets_.push_back(taps.size());
      taps.insert(taps.end(), v->begin(), v->end());
      taps.resize((taps.size() + taps_padding - 1) / taps_padding * taps_padding, 0.f);
    }
    taps_ = device_buffer<float>(taps.size());
    upload(taps_.data(), taps.data(), taps_.bytes());
    // the smallest band (one output slice) must fit, in the widest pixel type
    if (band_bytes(1, pixel::f32, true) > cap_)
      throw std::invalid_argument("conv::plan3d: the memory cap (" + std::to_string(cap_) +
                                  " bytes) is below one band of the separable method (" +
                                  std::to_string(band_bytes(1, pixel::f32, true)) + " bytes: " +
                                  std::to_string(prob.kd) + " input slices, their two float passes and an output slice)");
  }

  backend kind() const override { return backend::cuda; }
  cpu_method method() const override { return cpu_method::separable; }

  void execute_device(const void* in, void* out, pixel px, cudaStream_t stream) override {
    device_scope on(device_);
    if (whole_bytes(px, false) <= cap_) {
      run_whole(in, out, px, stream);
      return;
    }
    run_bands(static_cast<const char*>(in), static_cast<char*>(out), px, false, stream);
  }

  bool execute_device_step(const float* in, float* out, const store_step& step, cudaStream_t stream) override {
    device_scope on(device_);
    if (whole_bytes(pixel::f32, false) <= cap_)
      passes(in, out, prob.depth, prob.volumes, false, pixel::f32, stream, &step);
    else
      run_bands(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out), pixel::f32, false, stream, &step);
    return true;
  }

  void execute(const void* in, void* out, pixel px) override {
    device_scope on(device_);
    const std::size_t bytes = pixel_bytes(px);
    const std::size_t in_bytes = std::size_t(prob.volumes * prob.input_voxels()) * bytes;
    const std::size_t out_bytes = std::size_t(prob.volumes * prob.output_voxels()) * bytes;
    if (whole_bytes(px, true) <= cap_) {
      d_in_.reserve(in_bytes);
      d_out_.reserve(out_bytes);
      staging().upload(d_in_.data(), in, in_bytes, nullptr);
      run_whole(d_in_.data(), d_out_.data(), px, nullptr);
      staging().download(out, d_out_.data(), out_bytes, nullptr);
      return;
    }
    run_bands(static_cast<const char*>(in), static_cast<char*>(out), px, true, nullptr);
  }

 private:
  const float* depth_taps() const { return taps_.data() + offsets_[0]; }
  const float* column_taps() const { return taps_.data() + offsets_[1]; }
  const float* row_taps() const { return taps_.data() + offsets_[2]; }
  std::size_t t1_slice() const { return std::size_t(prob.height * prob.geo.out_w) * 4; }
  std::size_t t2_slice() const { return std::size_t(prob.geo.out_h * prob.geo.out_w) * 4; }
  std::size_t in_slice(pixel px) const { return std::size_t(prob.height * prob.width) * pixel_bytes(px); }
  std::size_t out_slice(pixel px) const { return std::size_t(prob.geo.out_h * prob.geo.out_w) * pixel_bytes(px); }

  // Device bytes of the whole batch at once: the intermediates, and the copies of host buffers.
  std::size_t whole_bytes(pixel px, bool host) const {
    const std::size_t slices = std::size_t(prob.volumes) * std::size_t(prob.depth);
    std::size_t b = slices * (t1_slice() + t2_slice());
    if (host) b += slices * in_slice(px) + std::size_t(prob.volumes * prob.geo.out_d) * out_slice(px);
    return b;
  }
  // A band of `band` output slices: the slab (band + kd - 1 input slices) and its two float
  // passes, and the output slices where they are staged (host buffers).
  std::size_t band_bytes(long long band, pixel px, bool host) const {
    const std::size_t slab = std::size_t(band + prob.kd - 1);
    return slab * (in_slice(px) + t1_slice() + t2_slice()) + (host ? std::size_t(band) * out_slice(px) : 0);
  }

  // step: folded into the slice pass's store (float only; its aux indexed as out).
  template <typename T>
  void passes(const T* in, T* out, long long slices, int volumes, bool slab, pixel px, cudaStream_t stream,
              const store_step* step = nullptr) {
    const problem3d& p = prob;
    const geometry3d& g = p.geo;
    const boundary b = p.options.semantics.border;
    const separable3d_outside o = separable3d_outside_values(p, f_, px);
    t1_.reserve(std::size_t(volumes * slices) * t1_slice());
    t2_.reserve(std::size_t(volumes * slices) * t2_slice());
    float* t1 = reinterpret_cast<float*>(t1_.data());
    float* t2 = reinterpret_cast<float*>(t2_.data());
    axis_taps(in, t1, volumes * slices * p.height, (int)p.width, (int)g.out_w, 1, g.ox, b, o.rows, row_taps(), p.kw,
              stream);
    axis_taps(t1, t2, volumes * slices, (int)p.height, (int)g.out_h, g.out_w, g.oy, b, o.columns, column_taps(), p.kh,
              stream);
    // the slab holds every slice the band reads: output slice z reads slab slices z .. z + kd - 1
    const int n_src = slab ? (int)slices : (int)p.depth, n_dst = slab ? (int)(slices - (p.kd - 1)) : (int)g.out_d;
    const int off = slab ? p.kd - 1 : (int)g.oz;
    auto slice_pass = [&](auto kind, const store_step& st) {
      axis_taps<decltype(kind)::value>(t2, out, volumes, n_src, n_dst, g.out_h * g.out_w, off, b, o.slices, depth_taps(),
                                       p.kd, stream, st);
    };
    if constexpr (std::is_same_v<T, float>) {
      if (step != nullptr) {
        if (step->what == store_step::kind::ratio)
          slice_pass(std::integral_constant<store_kind, store_kind::ratio>{}, *step);
        else
          slice_pass(std::integral_constant<store_kind, store_kind::update>{}, *step);
        return;
      }
    }
    slice_pass(std::integral_constant<store_kind, store_kind::plain>{}, store_step{});
  }

  void run_whole(const void* in, void* out, pixel px, cudaStream_t stream) {
    dispatch_pixel(px, [&](auto type) {
      using T = decltype(type);
      passes(static_cast<const T*>(in), static_cast<T*>(out), prob.depth, prob.volumes, false, px, stream);
    });
  }

  // Per volume, bands of output slices, each from its slab of extended input slices: copied
  // from `in` (host: uploaded; device: on the device) or filled with the outside value.
  // step (device buffers, floats): folded into each band's slice pass, its aux offset as the band's output.
  void run_bands(const char* in, char* out, pixel px, bool host, cudaStream_t stream, const store_step* step = nullptr) {
    const long long out_d = prob.geo.out_d;
    long long band = 1;
    while (band < out_d && band_bytes(std::min(out_d, band * 2), px, host) <= cap_) band *= 2;
    band = std::min(band, out_d);
    const std::size_t in_s = in_slice(px), out_s = out_slice(px);
    d_in_.reserve(std::size_t(band + prob.kd - 1) * in_s);
    if (host) d_out_.reserve(std::size_t(band) * out_s);
    dispatch_pixel(px, [&](auto type) {
      using T = decltype(type);
      const T fill = T(separable3d_outside_values(prob, f_, px).rows);
      for (int vol = 0; vol < prob.volumes; ++vol)
        for (long long z0 = 0; z0 < out_d; z0 += band) {
          const long long z1 = std::min(out_d, z0 + band);
          const band3d b = make_band(prob, z0, z1);
          std::vector<host_transfer> slab;  // host: the slices to upload
          for (std::size_t j = 0; j < b.slices.size(); ++j) {
            char* slot = d_in_.data() + j * in_s;
            if (b.slices[j] < 0) {
              const long long n = prob.height * prob.width;
              fill_kernel<T><<<(unsigned)std::min<long long>((n + 255) / 256, 4096), 256, 0, stream>>>(
                  reinterpret_cast<T*>(slot), n, fill);
              check_launch("fill_kernel");
            } else {
              const char* src = in + (std::size_t(vol) * prob.depth + b.slices[j]) * in_s;
              if (host) slab.push_back({slot, src, in_s});
              else GPUCONV_CUDA(cudaMemcpyAsync(slot, src, in_s, cudaMemcpyDeviceToDevice, stream));
            }
          }
          if (host) staging().upload(slab, stream);
          char* dst = host ? d_out_.data() : out + (std::size_t(vol) * out_d + z0) * out_s;
          store_step band_step;
          if (step != nullptr) {
            band_step = *step;
            band_step.aux += (std::size_t(vol) * out_d + z0) * std::size_t(prob.geo.out_h * prob.geo.out_w);
          }
          passes(reinterpret_cast<const T*>(d_in_.data()), reinterpret_cast<T*>(dst), (long long)b.slices.size(), 1, true,
                 px, stream, step != nullptr ? &band_step : nullptr);
          if (host)
            staging().download(out + (std::size_t(vol) * out_d + z0) * out_s, d_out_.data(), std::size_t(z1 - z0) * out_s,
                               stream);
        }
      if (host) GPUCONV_CUDA(cudaStreamSynchronize(stream));
    });
  }

  rank1_3d_factors f_;
  int device_ = 0;
  std::size_t cap_ = 0;
  device_buffer<float> taps_;
  std::vector<std::size_t> offsets_;  // of the depth, column and row taps in taps_
  device_buffer<char> t1_, t2_, d_in_, d_out_;  // grown on demand
  lazy_host_staging staging{prob.options.threads};  // execute()'s page-locked staging
};

}  // namespace

std::unique_ptr<plan3d::impl> make_cuda3d_separable(problem3d p, rank1_3d_factors f) {
  return std::make_unique<cuda3d_separable>(std::move(p), std::move(f));
}

}  // namespace gpuconv::conv
