// Thread level of the direct and separable paths: the walks that sum a thread's
// rows_per_thread x 4 outputs from shared rows (direct_walks.cuh's window kernel and separable.cu's
// tile kernel share the column and row walks), and the tile store. A thread's window starts
// at `base` (its first shared row, its first column); out row a, column c reads shared row
// a + (kh - 1) - i, column c + u for tap (i, kw - 1 - u) (direct_walks.cuh's index map).
#pragma once
#include <cstdint>
#include <type_traits>

#include "direct.hpp"
#include "divider.hpp"
#include "pixel.cuh"

namespace gpuconv::conv {

// A thread's R x 4 sums (R = window_policy::rows_per_thread unless the launch takes fewer).
template <int R = window_policy::rows_per_thread>
using window_acc = float[R][window_policy::columns_per_thread];

// kw = 1: tap i at sm_taps[4 i].
template <int R>
__device__ GPUCONV_INLINE void column_walk(const float* base, int stride, const float* sm_taps, int kh,
                                           window_acc<R>& acc) {
  // Shared row s serves output row a with tap i = a + kh - 1 - s. Rows R - 1 <= s <= kh - 1
  // serve all R output rows: there consecutive rows' taps shift by one, t[a] = k(a + kh - 1 - s),
  // kept in registers with one new tap a row (no checks, one shared read of taps).
  auto checked_row = [&](int s) {
    const float4 f = *reinterpret_cast<const float4*>(base + s * stride);
#pragma unroll
    for (int a = 0; a < R; ++a) {
      const int i = a + kh - 1 - s;
      if ((unsigned)i < (unsigned)kh) {
        const float tap = sm_taps[4 * i];
        acc[a][0] = fmaf(tap, f.x, acc[a][0]);
        acc[a][1] = fmaf(tap, f.y, acc[a][1]);
        acc[a][2] = fmaf(tap, f.z, acc[a][2]);
        acc[a][3] = fmaf(tap, f.w, acc[a][3]);
      }
    }
  };
  const bool middle = kh >= R;
  int s = 0;
  for (; s < (middle ? R - 1 : R + kh - 1); ++s) checked_row(s);
  if (middle) {
    float t[R];
#pragma unroll
    for (int a = 0; a < R; ++a) t[a] = sm_taps[4 * (a + kh - R)];
#pragma unroll 8
    for (; s <= kh - 1; ++s) {
      const float4 f = *reinterpret_cast<const float4*>(base + s * stride);
#pragma unroll
      for (int a = 0; a < R; ++a) {
        acc[a][0] = fmaf(t[a], f.x, acc[a][0]);
        acc[a][1] = fmaf(t[a], f.y, acc[a][1]);
        acc[a][2] = fmaf(t[a], f.z, acc[a][2]);
        acc[a][3] = fmaf(t[a], f.w, acc[a][3]);
      }
#pragma unroll
      for (int a = R - 1; a > 0; --a) t[a] = t[a - 1];
      t[0] = sm_taps[4 * max(kh - 2 - s, 0)];  // row s + 1's tap for output row 0 (unused past the last)
    }
    for (; s < R + kh - 1; ++s) checked_row(s);
  }
}

// kh = 1: tap u at sm_taps[u] = k(0, kw-1-u), zero for u >= kw; shared row a serves output row a.
template <int R>
__device__ GPUCONV_INLINE void row_walk(const float* base, int stride, const float* sm_taps, int kw,
                                        window_acc<R>& acc) {
  constexpr int C = window_policy::columns_per_thread;
  const int kw4 = round4(kw);
  float4 lo[R];
#pragma unroll
  for (int a = 0; a < R; ++a) lo[a] = *reinterpret_cast<const float4*>(base + a * stride);
  for (int u0 = 0; u0 < kw4; u0 += 4) {
    const float4 t4 = *reinterpret_cast<const float4*>(sm_taps + u0);
    const float tap[4] = {t4.x, t4.y, t4.z, t4.w};
#pragma unroll
    for (int a = 0; a < R; ++a) {
      const float4 hi = *reinterpret_cast<const float4*>(base + a * stride + u0 + 4);
      const float v[8] = {lo[a].x, lo[a].y, lo[a].z, lo[a].w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int c = 0; c < C; ++c) acc[a][c] = fmaf(tap[u], v[c + u], acc[a][c]);
      lo[a] = hi;
    }
  }
}

// 4 outputs as one store, for a thread whose 4 columns lie in the row and whose pointer is
// aligned to the 4 pixels: one 16-, 4- or 8-byte store (written out: the compiler otherwise
// merges it with the per-pixel stores of the edge path and splits it into four). Narrow pixels
// are packed as store_pixel rounds and saturates them (pixel.cuh).
template <typename out_t>
__device__ GPUCONV_INLINE void store4_aligned(out_t* p, const float (&v)[4]) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<out_t, float>) {
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3])
                 : "memory");
  } else if constexpr (std::is_same_v<out_t, std::uint8_t>) {
    asm volatile("st.global.u32 [%0], %1;\n" ::"l"(p), "r"(pack_u8x4(v[0], v[1], v[2], v[3])) : "memory");
  } else {
    asm volatile("st.global.v2.u32 [%0], {%1, %2};\n" ::"l"(p), "r"(pack_u16x2(v[0], v[1])), "r"(pack_u16x2(v[2], v[3]))
                 : "memory");
  }
#else
  store4(p, v);
#endif
}

// The thread's outputs of the block's tile at (y0, x0) of output plane `plane` (rounded and
// saturated for narrow pixels; 4-pixel stores where the row and pointer allow).
template <int R, typename out_t>
__device__ GPUCONV_INLINE void store_tile(const window_acc<R>& acc, out_t* out, const window_map& m, long long plane,
                                          long long y0, long long x0, bool vector_store) {
  constexpr int C = window_policy::columns_per_thread;
  out_t* dst = out + (plane * m.out_step + m.out_offset) * m.out_h * m.out_w;
  const long long x = x0 + threadIdx.x * C;
  if (x >= m.out_w) return;
  const long long y_first = y0 + threadIdx.y * R;
  if (vector_store && x + C <= m.out_w && y_first + R <= m.out_h) {
    // all R rows in the output, 4 columns in each: one store a row, the pointer stepped
    out_t* p = dst + y_first * m.out_w + x;
#pragma unroll
    for (int a = 0; a < R; ++a, p += m.out_w) store4_aligned(p, acc[a]);
    return;
  }
#pragma unroll
  for (int a = 0; a < R; ++a) {
    const long long y = y_first + a;
    if (y >= m.out_h) break;
    out_t* row = dst + y * m.out_w;
    if (vector_store && x + C <= m.out_w) {
      store4(row + x, acc[a]);
    } else {
#pragma unroll
      for (int c = 0; c < C; ++c)
        if (x + c < m.out_w) row[x + c] = store_pixel<out_t>(acc[a][c]);
    }
  }
}

// Launch parameters by value: kernel k's taps when the unrolled walk reads them as constant-bank
// operands (n = K * K), a placeholder otherwise.
template <int n>
struct fixed_taps {
  float v[n];
};

enum class walk { unrolled, column, row, generic };

// What the direct path's window kernel is given (direct_walks.cuh), shared by its two phases.
struct window_args {
  window_map m;
  int kh, kw;
  const float* padded;  // the taps as the shared-memory walks read them (direct_tiles::padded)
  divider tiles_x, tiles_per_plane;
  int stride, taps_floats;
  bool vector_store;
};

// Block b: tile (b mod tiles_per_plane) of input plane b / tiles_per_plane.
struct window_block {
  long long plane, y0, x0;
};
template <int R = window_policy::rows_per_thread>
__device__ GPUCONV_INLINE window_block locate_block(const divider& tiles_x, const divider& tiles_per_plane) {
  constexpr int C = window_policy::columns_per_thread;
  // a multiply and a shift a division (divider.hpp): a launch has fewer than 2^31 blocks, and a
  // plane's tiles are at most all of them (64-bit divisions were ~10% of a 4096^2 K = 3 block's
  // instructions, and each 32-bit one is ~15)
  const block_tile t = split_block(blockIdx.x, tiles_per_plane, tiles_x);
  return {(long long)t.plane, (long long)t.row * blockDim.y * R, (long long)t.column * blockDim.x * C};
}

// Phase 1, before the barrier: the taps (shared-memory walks) and the window into shared
// memory (taps first, taps_floats of them, then the window's rows).
template <walk W, int R, typename in_t>
__device__ GPUCONV_INLINE void window_load(const in_t* __restrict__ in, const window_args& a, float* shared) {
  constexpr int C = window_policy::columns_per_thread;
  const window_block blk = locate_block<R>(a.tiles_x, a.tiles_per_plane);
  if constexpr (W != walk::unrolled) {
    const int threads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
    for (int e = tid; e < a.taps_floats; e += threads) shared[e] = a.padded[e];
  }
  load_tile<in_t, W == walk::unrolled ? 4 : 6>(in + blk.plane * a.m.height * a.m.width, a.m,
                                                blk.y0 + a.m.oy - (a.kh - 1), blk.x0 + a.m.ox - (a.kw - 1),
                                                int(blockDim.y) * R + a.kh - 1, int(blockDim.x) * C + a.kw - 1,
                                                a.stride, shared + a.taps_floats);
}

// Phase 2, after the barrier: the thread's outputs summed by walk W, and stored.
template <walk W, int K, int R, typename out_t>
__device__ GPUCONV_INLINE void window_sum(out_t* __restrict__ out, const window_args& args, const fixed_taps<K * K>& taps,
                                          const float* shared) {
  constexpr int C = window_policy::columns_per_thread;
  static_assert(C == 4, "the walks read one float4 per shared row");
  const window_block blk = locate_block<R>(args.tiles_x, args.tiles_per_plane);
  const float* sm_taps = shared;
  const int stride = args.stride, kh = args.kh, kw = args.kw;
  window_acc<R> acc;
#pragma unroll
  for (int a = 0; a < R; ++a)
#pragma unroll
    for (int c = 0; c < C; ++c) acc[a][c] = 0.f;
  const float* base = shared + args.taps_floats + threadIdx.y * R * stride + threadIdx.x * C;
  if constexpr (W == walk::unrolled) {
    constexpr int width = round4(C + K - 1);
#pragma unroll
    for (int s = 0; s < R + K - 1; ++s) {
      float v[width];
#pragma unroll
      for (int q = 0; q < width; q += 4) {
        const float4 f = *reinterpret_cast<const float4*>(base + s * stride + q);
        v[q] = f.x, v[q + 1] = f.y, v[q + 2] = f.z, v[q + 3] = f.w;
      }
#pragma unroll
      for (int a = 0; a < R; ++a) {
        const int i = a + K - 1 - s;
        if (i < 0 || i >= K) continue;
#pragma unroll
        for (int u = 0; u < K; ++u) {
          const float tap = taps.v[i * K + K - 1 - u];
#pragma unroll
          for (int c = 0; c < C; ++c) acc[a][c] = fmaf(tap, v[c + u], acc[a][c]);
        }
      }
    }
  } else if constexpr (W == walk::column) {
    column_walk(base, stride, sm_taps, kh, acc);
  } else if constexpr (W == walk::row) {
    row_walk(base, stride, sm_taps, kw, acc);
  } else {  // generic: taps row i at sm_taps[i kw4 + u] = k(i, kw-1-u), zero for u >= kw
    const int kw4 = round4(kw);
    for (int u0 = 0; u0 < kw4; u0 += 4) {
      for (int s = 0; s < R + kh - 1; ++s) {
        const float4 lo = *reinterpret_cast<const float4*>(base + s * stride + u0);
        const float4 hi = *reinterpret_cast<const float4*>(base + s * stride + u0 + 4);
        const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int a = 0; a < R; ++a) {
          const int i = a + kh - 1 - s;
          if ((unsigned)i < (unsigned)kh) {
            const float4 t4 = *reinterpret_cast<const float4*>(sm_taps + i * kw4 + u0);
            const float tap[4] = {t4.x, t4.y, t4.z, t4.w};
#pragma unroll
            for (int u = 0; u < 4; ++u)
#pragma unroll
              for (int c = 0; c < C; ++c) acc[a][c] = fmaf(tap[u], v[c + u], acc[a][c]);
          }
        }
      }
    }
  }

  store_tile(acc, out, args.m, blk.plane, blk.y0, blk.x0, args.vector_store);
}

}  // namespace gpuconv::conv
