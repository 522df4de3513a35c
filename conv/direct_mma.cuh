// The direct path's tensor-core walk for 8-bit pixels (direct_run_u8.cu launches it for uint8 in and out,
// kernels up to 9 x 9; direct.hpp mma_walk_applies). Every pixel value 0..255 is exact in fp16,
// so the sums can run as half-precision matrix products with fp32 accumulation
// (mma.sync m16n8k16, sm_80 and later) if each tap is split into two halves, hi = fp16(w s) and
// lo = fp16(w s - hi) with s a power of two (mma_walk_scale) that puts the largest |tap| in
// [2^10, 2^11) where it can: the products are exact, hi + lo carries ~22 bits of each tap, and
// the sums are fp32 as on the SIMT walks. The window holds each pixel times 1 / s (exact: s is
// clamped to [2^-5, 2^14], so that p / s is a normal half or 0), so the sums come out unscaled.
// Two products a tap row instead of one FMA a tap: a 16 x 8 block of outputs takes 2 kh matrix
// products and kh 16 x 16 loads of the window (ldmatrix), against 128 kh kw FMAs.
//
// The product. A block of 256 threads computes a tile of 64 rows x 128 columns of one plane;
// warp w takes rows 16 (w mod 4) .. + 15 and columns 64 (w / 4) .. + 63, as 8 tiles of 16 x 8.
// The window in shared memory (fp16) holds extended input row y0 + oy - (kh-1) + r at row r and
// column x_a + c at column c, with x_a = x0 + ox - (kw-1) - sh rounded down to a multiple of 4
// (sh in 0..3, the same for every tile: x0 is a multiple of 128), so that the window's rows start
// on 4-byte words of the image. For the 16 x 8 outputs at rows a0.., columns n0.. and tap row
// i = kh-1-ky:
//   out(a0 + a, n0 + n) += sum_q  A(a, q) T_ky(q, n),   A(a, q) = window(a0 + a + ky, n0 + q),
//   T_ky(q, n) = k(kh-1-ky, kw-1-u) for u = q - n - sh in [0, kw), else 0   (q < 16, n < 8),
// which needs n + sh + kw - 1 <= 15 for n = 7: kw + sh <= 9. A is the 16 x 16 window block at
// (a0 + ky, n0) as stored (row-major, an ldmatrix.x4), T_ky the B operand (col-major, one
// fragment a lane for every n-tile: the tap table below, built on the host once a kernel and
// copied into shared memory by each block).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "../fft/thread/config.hpp"
#include "direct.hpp"
#include "divider.hpp"
#include "semantics.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>

#include "pixel.cuh"
#endif

namespace gpuconv::conv {

// Blocks of 256 threads a multiprocessor the registers must allow: 4 gives 59 registers without
// spills (1: 116, 3: 75; sm_90). A measurement knob.
#ifndef GPUCONV_MMA_MIN_BLOCKS
#define GPUCONV_MMA_MIN_BLOCKS 4
#endif

template <int NT>
struct mma_walk_shape {
  static constexpr int tile_h = 64, tile_w = 128;   // outputs a block
  static constexpr int n_tiles = NT;                // 16 x 8 output tiles a warp, side by side: 8
                                                    // (256 threads, 59 registers, 4 blocks an SM)
                                                    // measured 4-10% faster than 4 (512 threads, 40
                                                    // registers, 3 blocks) at K = 5, 7 (H200)
  static constexpr int warps_m = tile_h / 16, warps_n = tile_w / (8 * NT);
  static constexpr int threads = 32 * warps_m * warps_n;
  static constexpr int window_w = tile_w + 8;       // halves a window row: 272 bytes, rows 16 bytes
                                                    // apart mod 128 (ldmatrix without bank conflicts)
  static constexpr int out_stride = tile_w + 16;    // bytes a staged output row (16-byte rows,
                                                    // each of 8 rows on its own banks)
  static constexpr int max_k = 9;
  // the window's loads (mma_load_edge and the kernel's interior path): rows of `groups` 4-byte
  // groups; warp w takes rows w + warps i (row_steps of them), lane l group l, and the `extra`
  // groups past 32 a row go one a thread
  static constexpr int warps = threads / 32, groups = window_w / 4, extra = groups - 32;
  static constexpr int row_steps = (tile_h + max_k - 1 + warps - 1) / warps;
  static_assert(window_w == 4 * groups && extra > 0 && extra * (tile_h + max_k - 1) <= threads,
                "whole groups, 32 and at most one more a thread");
};
using mma_walk_policy = mma_walk_shape<8>;

// The scaled tap T_ky(q, n) above, from the direct path's padded taps (kernel row i at
// padded[i * kw4 + u] = k(i, kw-1-u)) times the scale.
HOST_DEVICE inline float mma_tap(const float* padded, int kh, int kw, int kw4, int sh, int ky, int q, int n,
                                 float scale) {
  const int u = q - n - sh;
  return u >= 0 && u < kw ? padded[(kh - 1 - ky) * kw4 + u] * scale : 0.f;
}

// The window's first column's offset below the 4-byte word: sh = (ox - (kw-1)) mod 4.
HOST_DEVICE constexpr int mma_shift(int ox, int kw) { return int(detail::floor_mod((long long)ox - (kw - 1), 4)); }

// IEEE binary16 bits of a float, rounded to nearest even (as __float2half_rn; |f| >= 65520 gives
// the infinity), and back: portable, so that the host builds and tests the tap table below.
inline std::uint16_t half_bits(float f) {
  std::uint32_t x = 0;
  std::memcpy(&x, &f, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);                 // 65520 and up (and NaN)
  if (a < 0x38800000u)                                                         // below 2^-14: subnormal
    return std::uint16_t(sign | std::uint32_t(std::nearbyint(std::fabs(f) * 16777216.f)));  // exact scaling
  std::uint32_t h = ((a >> 23) - 112u) << 10 | (a & 0x7fffffu) >> 13;          // 127 - 15 = 112
  const std::uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;                   // a carry bumps the exponent
  return std::uint16_t(sign | h);
}
inline float half_value(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const float v = e == 0 ? std::ldexp(float(m), -24) : e == 31 ? INFINITY : std::ldexp(float(1024 + m), e - 25);
  return h & 0x8000u ? -v : v;
}

// The tap table for the B operands, kh x 32 entries of 4 words (`out`): lane (g, t4) of tap row
// ky holds T_ky(q, g) for q = 2 t4, 2 t4 + 1 (b0) and + 8 (b1), as fp16 pairs (the lower q in
// the low half), first hi = fp16(T) (words 0, 1), then lo = fp16(T - hi) (words 2, 3). Built on
// the host once a kernel and shift (direct_tiles); each block copies its kernel's into shared
// memory. (Built by every block from the padded taps it was 3-6% of the walk's instructions: ncu,
// session 60.)
inline void mma_tap_table(const float* padded, int kh, int kw, int sh, float scale, std::uint32_t* out) {
  const int kw4 = round4(kw);
  for (int ky = 0; ky < kh; ++ky)
    for (int l = 0; l < 32; ++l) {
      const int g = l >> 2, t4 = l & 3;
      std::uint32_t* e = out + 4 * (ky * 32 + l);
      for (int f = 0; f < 2; ++f) {
        e[f] = e[2 + f] = 0u;
        for (int s = 0; s < 2; ++s) {
          const float v = mma_tap(padded, kh, kw, kw4, sh, ky, 2 * t4 + 8 * f + s, g, scale);
          const std::uint16_t h = half_bits(v);
          e[f] |= std::uint32_t(h) << (16 * s);
          e[2 + f] |= std::uint32_t(half_bits(v - half_value(h))) << (16 * s);
        }
      }
    }
}

#if defined(__CUDACC__)

struct mma_walk_args {
  window_map m;
  int kh, kw, sh;
  const uint4* table;  // the tap table for this kernel and sh (mma_tap_table), kh x 32 entries
  unsigned window_scale, window_bias;  // bytes_to_halves: f = 1 / the taps' scale, and -1024 f (fp16 pairs)
  divider tiles_x, tiles_per_plane;
  bool vector_store;  // 16-byte output rows: out_w % 16 == 0 and the output 16-byte aligned
  bool word_loads;    // 4-byte input words: width % 4 == 0 and the input 4-byte aligned
};

// Four bytes (little end first) as four halves times the window's factor f (a power of two in
// [2^-14, 2^5], as the pair f, f in `scale` and -1024 f, -1024 f in `bias`): 0x6400 | b is the
// half 1024 + b, and one fused multiply-add gives (1024 + b) f - 1024 f = b f, a normal half (or
// 0), exactly.
__device__ GPUCONV_INLINE uint2 bytes_to_halves(unsigned w, unsigned scale, unsigned bias) {
  const unsigned lo = __byte_perm(w, 0x64646464u, 0x4140), hi = __byte_perm(w, 0x64646464u, 0x4342);
  const __half2 f = *reinterpret_cast<const __half2*>(&scale), c = *reinterpret_cast<const __half2*>(&bias);
  const __half2 a = __hfma2(*reinterpret_cast<const __half2*>(&lo), f, c);
  const __half2 b = __hfma2(*reinterpret_cast<const __half2*>(&hi), f, c);
  return {*reinterpret_cast<const unsigned*>(&a), *reinterpret_cast<const unsigned*>(&b)};
}

// A window at the image's edges (and every window of an image whose rows are not whole 4-byte
// words): each byte by the boundary rule, the constant outside (the plan has rounded it to a
// pixel value). Warp w takes window rows w + warps i, lane l their group l (4 bytes): the lane's
// 4 columns are resolved once, a row's source once, a batch of rows loaded before any is
// converted. The groups past 32 go one a thread, their bytes resolved one by one. (Every byte
// resolved on its own, ~900-1000 instructions a warp, was 9% of a 4096^2 K = 3..7 plan's
// instructions from the 9% of its blocks on an edge: ncu, session 60.)
template <typename P>
__device__ GPUCONV_INLINE void mma_load_edge(const std::uint8_t* src, const window_map& m, long long y_first,
                                             long long x_first, int rows, int tid, unsigned scale, unsigned bias,
                                             __half* window) {
  constexpr int groups = P::groups, warps = P::warps, extra = P::extra, batch = 3;
  const int lane = tid & 31, warp = tid >> 5, width = (int)m.width, height = (int)m.height;
  const unsigned outside = m.border == boundary::constant ? unsigned(m.constant_value) : 0u;
  unsigned off[4], image = 0;  // byte e of the lane's group: its image column, and bit e whether it has one
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int x = border_index(x_first + 4 * lane + e, width, m.border);
    off[e] = x < 0 ? 0u : unsigned(x);
    image |= x >= 0 ? 1u << e : 0u;
  }
  for (int r0 = warp; r0 < rows; r0 += batch * warps) {
    unsigned w[batch];
#pragma unroll
    for (int q = 0; q < batch; ++q) {
      const int r = r0 + q * warps;
      const int y = r < rows ? border_index(y_first + r, height, m.border) : -1;
      const std::uint8_t* row = src + (long long)(y < 0 ? 0 : y) * m.width;
      const unsigned read = y < 0 ? 0u : image;
      w[q] = 0u;
#pragma unroll
      for (int e = 0; e < 4; ++e) w[q] |= (read >> e & 1u ? unsigned(row[off[e]]) : outside) << (8 * e);
    }
#pragma unroll
    for (int q = 0; q < batch; ++q) {
      const int r = r0 + q * warps;
      if (r >= rows) break;
      *reinterpret_cast<uint2*>(window + 4 * (r * groups + lane)) = bytes_to_halves(w[q], scale, bias);
    }
  }
  if (tid < extra * rows) {
    const int r = tid / extra, gi = 32 + (tid - r * extra);
    const int y = border_index(y_first + r, height, m.border);
    const std::uint8_t* row = src + (long long)(y < 0 ? 0 : y) * m.width;
    unsigned word = 0u;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int x = border_index(x_first + 4 * gi + e, width, m.border);
      word |= (y >= 0 && x >= 0 ? unsigned(row[x]) : outside) << (8 * e);
    }
    *reinterpret_cast<uint2*>(window + 4 * (r * groups + gi)) = bytes_to_halves(word, scale, bias);
  }
}

template <typename P = mma_walk_policy>
__global__ void __launch_bounds__(P::threads, GPUCONV_MMA_MIN_BLOCKS * 256 / P::threads)
    mma_window_kernel(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, const mma_walk_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ uint4 mma_shared[];
  uint4* table = mma_shared;  // [ky][lane]: hi b0, hi b1, lo b0, lo b1
  __half* window = reinterpret_cast<__half*>(mma_shared + P::max_k * 32);
  const window_map& m = a.m;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // the block's tile (as locate_block)
  const block_tile bt = split_block(blockIdx.x, a.tiles_per_plane, a.tiles_x);
  const long long y0 = (long long)bt.row * P::tile_h, x0 = (long long)bt.column * P::tile_w;

  // the tap table (mma_tap_table): a 16-byte copy a thread (two for 9 rows)
  static_assert(P::max_k * 32 <= 2 * P::threads, "two copies a thread at most");
  if (tid < a.kh * 32) table[tid] = __ldg(a.table + tid);
  if (tid + P::threads < a.kh * 32) table[tid + P::threads] = __ldg(a.table + tid + P::threads);

  // the window: rows of window_w halves as 4-byte groups, unit (row r, group gi) at halves
  // 4 (r groups + gi). Interior windows of images in whole words: warp w takes rows w + warps i,
  // lane l their group l, a row's word one address step from the last (no division, one 64-bit
  // add a row), all of a thread's loads issued before any is converted (one memory latency a
  // block; a warp a row at a time took 9); the groups past 32 a row go one a thread. Windows at
  // the image's edges: mma_load_edge, in the same layout. (Units tid + threads k took a division
  // by the groups a row and a 64-bit multiply a word: 18-22% of the walk's instructions, ncu,
  // session 60.)
  constexpr int groups = P::groups, warps = P::warps, extra = P::extra, row_steps = P::row_steps;
  const int rows = P::tile_h + a.kh - 1;
  const long long y_first = y0 + m.oy - (a.kh - 1), x_first = x0 + m.ox - (a.kw - 1) - a.sh;
  const std::uint8_t* src = in + (long long)bt.plane * m.height * m.width;
  if (a.word_loads && x_first >= 0 && x_first + P::window_w <= m.width && y_first >= 0 && y_first + rows <= m.height) {
    const std::uint8_t* base = src + y_first * m.width + x_first;
    const unsigned* p = reinterpret_cast<const unsigned*>(base + warp * m.width) + lane;
    const long long step = warps * m.width;  // bytes between a warp's rows
    unsigned v[row_steps], ve = 0u;
    const bool has_extra = tid < extra * rows;
    const int re = tid / extra, ge = 32 + (tid - re * extra);
#pragma unroll
    for (int i = 0; i < row_steps; ++i) {
      // (rows >= tile_h: the first tile_h / warps steps need no test)
      v[i] = i < P::tile_h / warps || warp + warps * i < rows ? __ldg(p) : 0u;
      p = reinterpret_cast<const unsigned*>(reinterpret_cast<const std::uint8_t*>(p) + step);
    }
    if (has_extra) ve = __ldg(reinterpret_cast<const unsigned*>(base + re * m.width + 4 * ge));
#pragma unroll
    for (int i = 0; i < row_steps; ++i) {
      const int r = warp + warps * i;
      if (i < P::tile_h / warps || r < rows) *reinterpret_cast<uint2*>(window + 4 * (r * groups + lane)) = bytes_to_halves(v[i], a.window_scale, a.window_bias);
    }
    if (has_extra) *reinterpret_cast<uint2*>(window + 4 * (re * groups + ge)) = bytes_to_halves(ve, a.window_scale, a.window_bias);
  } else {
    mma_load_edge<P>(src, m, y_first, x_first, rows, tid, a.window_scale, a.window_bias, window);
  }
  __syncthreads();

  // the products: warp (wm, wn) takes rows 16 wm.., columns 8 NT wn.. as NT tiles of 16 x 8
  constexpr int NT = P::n_tiles;
  const int wm = warp % P::warps_m, wn = warp / P::warps_m, g = lane >> 2, t4 = lane & 3;
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  // ldmatrix.x4: lane L gives row (L mod 8) + 8 ((L / 8) mod 2), column 8 (L / 16) of the block
  const int lrow = (lane & 7) + 8 * ((lane >> 3) & 1), lcol = 8 * (lane >> 4);
  unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(window + (16 * wm + lrow) * P::window_w +
                                                                   8 * NT * wn + lcol));
#pragma unroll 1
  for (int ky = 0; ky < a.kh; ++ky, address += 2u * P::window_w) {
    const uint4 tb = table[ky * 32 + lane];
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      unsigned a0, a1, a2, a3;
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
                   : "r"(address + 16u * j));
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};\n"
          : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(tb.x), "r"(tb.y));
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};\n"
          : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(tb.z), "r"(tb.w));
    }
  }
  __syncthreads();  // the window is read: its memory takes the staged outputs

  // rounded, saturated, staged as bytes [tile_h][out_stride]; accumulator (c0, c1) is row g,
  // columns 2 t4, 2 t4 + 1 of the 16 x 8 tile, (c2, c3) row g + 8
  std::uint8_t* staged = reinterpret_cast<std::uint8_t*>(window);
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int col = 8 * NT * wn + 8 * j + 2 * t4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      *reinterpret_cast<unsigned short*>(staged + (16 * wm + g + 8 * h) * P::out_stride + col) =
          (unsigned short)pack_u8x2(acc[j][2 * h], acc[j][2 * h + 1]);
    }
  }
  __syncthreads();

  // out: 16-byte pieces of rows (8 a row)
  std::uint8_t* dst = out + ((long long)bt.plane * m.out_step + m.out_offset) * m.out_h * m.out_w;
  static_assert((P::tile_h * P::tile_w / 16) % P::threads == 0 && P::tile_w == 128, "8 whole pieces a row");
#pragma unroll
  for (int k = 0; k < (P::tile_h * P::tile_w / 16) / P::threads; ++k) {
    const int piece = tid + k * P::threads, r = piece >> 3, c = 16 * (piece & 7);
    const long long y = y0 + r, x = x0 + c;
    if (y >= m.out_h || x >= m.out_w) continue;
    const uint4 v = *reinterpret_cast<const uint4*>(staged + r * P::out_stride + c);
    std::uint8_t* p = dst + y * m.out_w + x;
    if (a.vector_store && x + 16 <= m.out_w) {
      *reinterpret_cast<uint4*>(p) = v;
    } else {
      const std::uint8_t* s = staged + r * P::out_stride + c;
      for (int e = 0; e < 16 && x + e < m.out_w; ++e) p[e] = s[e];
    }
  }
#endif
}

#endif  // __CUDACC__

}  // namespace gpuconv::conv
