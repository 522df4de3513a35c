// The direct path's kernels and their launcher (direct.hpp, direct.cu). One block per output tile
// of one output plane: load (tile_h + kh - 1) x (tile_w + kw - 1) extended input pixels into
// shared memory as float (boundary rule and pixel conversion in the loader), then every thread
// sums its rows_per_thread x 4 outputs from float4 reads of shared rows and stores them (rounded
// and saturated for narrow pixels, float4 / 4-pixel stores where the row allows).
//
// Index map (semantics.hpp): out(y, x) = sum k(i, j) in_ext(y + oy - i, x + ox - j). Shared row r,
// column c of the tile at outputs (y0, x0) hold in_ext(y0 + oy - (kh-1) + r, x0 + ox - (kw-1) + c),
// so output (y0 + ty R + a, x0 + tx 4 + c) reads shared row ty R + a + (kh-1) - i and column
// tx 4 + c + u with u = kw-1-j: a thread's register window over shared row rr = ty R + s serves
// tap row i = a + kh - 1 - s of its output row a, and window element c + u serves tap column
// kw-1-u of output column c.
//
// Included by the four direct_run_*.cu files, each instantiating direct_tiles::run for its pixel
// types: four CUDA modules where one had held all the walks, so that a process's first direct
// launch loads the walks of its pixel type only (CUDA decompresses a module's whole image on its
// first launch).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "../fft/device/cuda_check.hpp"
#include "../fft/device/shared_limit.hpp"
#include "direct.hpp"
#include "pixel.cuh"
#include "window_tile.cuh"
#include "window_walks.cuh"

namespace gpuconv::conv {

// (a named namespace: each window_kernel instantiation lives in one direct_run_*.cu)
namespace direct_kernels {

// Registers a thread may use. The unrolled walks of 8 rows up to 7 x 7 taps get 64: four blocks
// of 256 threads a multiprocessor where 72-80 registers allowed three (uint8 at K = 3..7, fp32
// at K = 7), with no spills but 6 / 56 bytes of spill store / load in the uint8 K = 3 walk. H100,
// `gpuconv-bench conv --sizes 3,5,7`, two rounds each, Gpix/s (back to back in brackets): uint8
// 4096^2 K = 3 442-460 (501-502) -> 461-487 (523-530), K = 5 359-378 (398-401) -> 381-391
// (419-424), K = 7 277-281 (301-302) -> 292 (313); fp32 1024 x 64^2 K = 7 138-141 (164) -> 154
// (176); fp32 4096^2 unchanged. Capping at 48 (five blocks) or 40 (six) spilled more and lost
// 1-23% at K = 3. Otherwise 65536 / max_threads (what __launch_bounds__(max_threads, 1) gives).
// (The even sides 4 and 6, unrolled since session 71, share the cap untimed without it.)
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

template <typename F>
void dispatch_unrolled(int k, F&& f) {
  switch (k) {
    case 3: f(std::integral_constant<int, 3>{}); return;
    case 4: f(std::integral_constant<int, 4>{}); return;
    case 5: f(std::integral_constant<int, 5>{}); return;
    case 6: f(std::integral_constant<int, 6>{}); return;
    case 7: f(std::integral_constant<int, 7>{}); return;
    case 8: f(std::integral_constant<int, 8>{}); return;
    case 9: f(std::integral_constant<int, 9>{}); return;
    case 10: f(std::integral_constant<int, 10>{}); return;
    case 11: f(std::integral_constant<int, 11>{}); return;
    default: throw std::invalid_argument("direct_tiles: no unrolled walk for kernel side " + std::to_string(k));
  }
}

}  // namespace direct_kernels

template <typename in_t, typename out_t>
void direct_tiles::run(const in_t* in, out_t* out, const window_map& m, int kernel, cudaStream_t stream) const {
  if (kernel < 0 || kernel >= count_)
    throw std::invalid_argument("direct_tiles::run: kernel " + std::to_string(kernel) + " of a bank of " +
                                std::to_string(count_));
  if constexpr (std::is_same_v<in_t, std::uint8_t> && std::is_same_v<out_t, std::uint8_t>) {
    if (tensor_cores_ && scales_[kernel] > 0.f && mma_walk_applies(kh_, kw_, m))
      return run_mma(in, out, m, kernel, stream);
  }
  // Between pixel types (the narrow images' separable passes: uint8 / uint16 rows into the float
  // intermediate, its columns back out) the walks come at 8 rows a thread and, for the row and
  // column walks, at 4: a separable pass takes 4 unless forced to 8 (a forced 2 runs at 8 there).
  constexpr bool same = std::is_same_v<in_t, out_t>;
  const int asked = separable_pass_ ? separable_pass_rows_for()
                    : same          ? window_rows_for(m.out_h, m.out_w, kh_, kw_, m.planes, sms_)
                                    : window_policy::rows_per_thread;
  const bool line_walk = kh_ == 1 || kw_ == 1;
  const int rows = same || (asked == 4 && line_walk) ? asked : window_policy::rows_per_thread;
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
    if (same && direct_unrolled(kh_, kw_)) {  // (the separable passes are never square)
      if constexpr (same) direct_kernels::dispatch_unrolled(kh_, [&](auto side) {
        constexpr int K = decltype(side)::value;
        fixed_taps<K * K> taps;
        std::copy_n(host_.data() + std::size_t(kernel) * K * K, K * K, taps.v);
        launch(&direct_kernels::window_kernel<walk::unrolled, K, R, in_t, out_t>, taps);
      });
    } else if (kw_ == 1) {
      launch(&direct_kernels::window_kernel<walk::column, 1, R, in_t, out_t>, fixed_taps<1>{});
    } else if (kh_ == 1) {
      launch(&direct_kernels::window_kernel<walk::row, 1, R, in_t, out_t>, fixed_taps<1>{});
    } else if constexpr (same || R == window_policy::rows_per_thread) {  // (between types: 8 rows only)
      launch(&direct_kernels::window_kernel<walk::generic, 1, R, in_t, out_t>, fixed_taps<1>{});
    } else {  // (`rows` above never asks for it: not a silent launch of nothing if that changes)
      throw std::logic_error("direct_tiles::run: no generic walk between pixel types at " + std::to_string(R) +
                             " rows a thread");
    }
  };
  if constexpr (same)
    if (rows == 2) return walks(std::integral_constant<int, 2>{});
  if (rows == 4) return walks(std::integral_constant<int, 4>{});
  walks(std::integral_constant<int, window_policy::rows_per_thread>{});
}

}  // namespace gpuconv::conv
