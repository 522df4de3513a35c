// Block level of the direct and separable paths (direct_walks.cuh, separable.cu): a window of extended
// input pixels loaded into shared memory as float, the boundary rule applied in the loader by
// border_index (the FFT paths' gather uses the same function: same semantics), float pixels
// copied by cp.async, narrow ones converted on the way.
#pragma once
#include <cstdint>
#include <type_traits>

#include "direct.hpp"
#include "pixel.cuh"

namespace gpuconv::conv {

// One shared element from global memory: float pixels by cp.async (sm_80 and later: the copy
// goes to shared memory without a register, so a thread has all its loads in flight at once;
// wait_copies() before the barrier), narrow ones converted through a register.
template <typename in_t>
__device__ GPUCONV_INLINE void copy_pixel(float* dst, const in_t* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<in_t, float>) {
    const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(to), "l"(src) : "memory");
    return;
  }
#endif
  *dst = pixel_value(*src);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// The 32-bit shared-window address of p, taken once in asm: ptxas otherwise recomputes the
// window's base at every element of the copy loops.
__device__ GPUCONV_INLINE unsigned shared_address(const float* p) {
  unsigned a;
  asm volatile("{\n\t.reg .u64 t;\n\tcvta.to.shared.u64 t, %1;\n\tcvt.u32.u64 %0, t;\n\t}" : "=r"(a) : "l"(p));
  return a;
}
#endif

__device__ GPUCONV_INLINE void wait_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Row `row` of the window (lane l's element of chunk 0 at row[0]) from the lane's held pixels:
// chunk k's where bit k of `read` is set, else `outside`; the tail chunk's (k = full) only where
// the lane's tail column lies inside the stride, and `tail_fill` in its place (a pad column holds
// 0). The interior loader passes every bit set.
template <int full, typename held>
__device__ GPUCONV_INLINE void store_row(float* row, const held (&v)[full + 1], unsigned read, float outside,
                                         bool tail_write, float tail_fill) {
#pragma unroll
  for (int k = 0; k < full; ++k) row[32 * k] = read >> k & 1u ? pixel_value(v[k]) : outside;
  if (tail_write) row[32 * full] = read >> full & 1u ? pixel_value(v[full]) : tail_fill;
}

// The pad columns past the tail chunk, [32 (full + 1), stride) of each row (at most one chunk:
// a tile whose stride reaches past its last columns' chunk by round4(kw) + 4 - (cols - 32 full),
// e.g. cols = 158, stride = 164 at kw = 31 on 128 outputs), zero as every pad column.
template <int full>
__device__ GPUCONV_INLINE void zero_last_pads(float* sm, int g, int l, int groups, int rows, int stride) {
  const int c = 32 * (full + 1) + l;
  if (c >= stride) return;
  for (int r = g; r < rows; r += groups) sm[r * stride + c] = 0.f;
}

// A tile whose rows and columns all lie inside the image (most tiles of a large image), loaded
// by warps along rows, lane l taking columns l + 32 k: chunks k < full hold only image columns
// (every lane copies), chunk `full` holds the row's last columns, its pad columns [cols, stride)
// (zero) and, for the lanes past the stride, nothing. No boundary rule, no per-element test:
// per row `full` copies at fixed offsets from the row's first, the tail chunk's one, and the
// pointer steps. `src` is the first row's element of lane l (row g of the tile, column l).
// Float pixels go by cp.async (the tail's pad columns by its zero fill, the lanes past the
// stride predicated off); narrow ones are loaded for a batch of rows before any is converted.
// pad_chunk: pad columns past the tail chunk (stride up to 32 (full + 2)), zero_last_pads.
// (The general loader below spent ~13 instructions an element on these tiles: per-element
// branches around each copy, a boundary lookup a row, 64-bit addresses.)
template <int full, bool pad_chunk, typename in_t>
__device__ GPUCONV_INLINE void load_interior(const in_t* src, long long width, int g, int l, int groups, int rows,
                                             int cols, int stride, float* sm) {
  if constexpr (pad_chunk) zero_last_pads<full>(sm, g, l, groups, rows, stride);
  const int tail = 32 * full + l;  // the lane's column in the tail chunk
  const bool tail_copy = tail < cols, tail_write = tail < stride;
  const long long src_step = (long long)groups * width;
  if constexpr (std::is_same_v<in_t, float>) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned dst = shared_address(sm + g * stride + l);  // row g's element l
    const unsigned dst_step = 4u * unsigned(groups * stride), tail_bytes = tail_copy ? 4u : 0u;
    const unsigned tail_on = tail_write ? 1u : 0u;
    const float* tail_src = src + (tail_copy ? 32 * full : 0);  // a pad column reads nothing: the row's first
    for (int r = g; r < rows; r += groups, src += src_step, tail_src += src_step, dst += dst_step) {
#pragma unroll
      for (int k = 0; k < full; ++k)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst + 128u * k), "l"(src + 32 * k) : "memory");
      asm volatile(
          "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %3, 0;\n\t@p cp.async.ca.shared.global [%0], [%1], 4, %2;\n\t}\n" ::"r"(
              dst + 128u * full),
          "l"(tail_src), "r"(tail_bytes), "r"(tail_on)
          : "memory");
    }
    return;
#endif
  }
  // narrow pixels (and float ones on the host): a batch of rows loaded, then converted and stored
  constexpr int batch = std::is_same_v<in_t, float> ? 1 : 4;
  for (int r0 = g; r0 < rows; r0 += batch * groups, src += batch * src_step) {
    // (narrow pixels held as 32-bit words: a byte or half-word register took a clear before its
    // load and a mask after it)
    using held = std::conditional_t<std::is_same_v<in_t, float>, float, unsigned>;
    held v[batch][full + 1];
#pragma unroll
    for (int q = 0; q < batch; ++q) {
      const bool live = r0 + q * groups < rows;
      const in_t* s = src + q * src_step;
#pragma unroll
      for (int k = 0; k < full; ++k) v[q][k] = live ? held(s[32 * k]) : held(0);
      v[q][full] = live && tail_copy ? held(s[32 * full]) : held(0);
    }
#pragma unroll
    for (int q = 0; q < batch; ++q) {
      const int r = r0 + q * groups;
      if (r >= rows) break;
      store_row<full>(sm + r * stride + l, v[q], ~0u, 0.f, tail_write, 0.f);
    }
  }
}

// A tile of narrow pixels that crosses the image's edge (the edge tiles of a large image), in
// load_interior's layout: lane l takes columns l + 32 k, chunks k < full hold only window
// columns, chunk `full` the last ones and the pad columns. A lane's columns are resolved once
// (the image column, and whether the element is the image's), a row's once (its source row,
// or outside). An element then takes ~12 instructions in the SASS (a bit test, the plane pointer
// reloaded from the constant bank, a 64-bit add, the load, a conversion, a select, a store)
// against load_interior's ~7. (The general loader below resolves them per element: ncu of a
// 4096^2 uint8 K = 3 plan, session 62, had the 9% of the blocks on an edge run 14% of the
// kernel's instructions, ~4x an interior block's per element; docs/notes-conv.md.)
template <int full, bool pad_chunk, typename in_t>
__device__ GPUCONV_INLINE void load_edge(const in_t* plane, const window_map& m, long long y_first, long long x_first,
                                         bool inside_x, int g, int l, int groups, int rows, int cols, int stride,
                                         float* sm, float outside) {
  constexpr int batch = 2;
  if constexpr (pad_chunk) zero_last_pads<full>(sm, g, l, groups, rows, stride);
  unsigned off[full + 1];  // the lane's image column in chunk k (0 where it reads none)
  unsigned image = 0;      // bit k: chunk k's element is the image's (where its row is)
#pragma unroll
  for (int k = 0; k <= full; ++k) {
    const int c = l + 32 * k;
    const int x = c >= cols ? -1 : inside_x ? int(x_first + c) : border_index(x_first + c, (int)m.width, m.border);
    off[k] = x < 0 ? 0u : unsigned(x);
    image |= x >= 0 ? 1u << k : 0u;
  }
  const int tail = 32 * full + l;
  const bool tail_write = tail < stride;
  const float tail_fill = tail < cols ? outside : 0.f;  // a pad column holds 0
  const bool inside_y = y_first >= 0 && y_first + rows <= m.height;
  for (int r0 = g; r0 < rows; r0 += batch * groups) {
    const in_t* src[batch];
    unsigned read[batch];  // `image` where the row is the image's, else 0
    unsigned v[batch][full + 1];
#pragma unroll
    for (int q = 0; q < batch; ++q) {
      const int r = r0 + q * groups;
      const int y = r >= rows ? -1 : inside_y ? int(y_first + r) : border_index(y_first + r, (int)m.height, m.border);
      read[q] = y < 0 ? 0u : image;
      src[q] = plane + (long long)(y < 0 ? 0 : y) * m.width;
#pragma unroll
      for (int k = 0; k <= full; ++k) v[q][k] = read[q] >> k & 1u ? unsigned(src[q][off[k]]) : 0u;
    }
#pragma unroll
    for (int q = 0; q < batch; ++q) {
      const int r = r0 + q * groups;
      if (r >= rows) break;
      store_row<full>(sm + r * stride + l, v[q], read[q], outside, tail_write, tail_fill);
    }
  }
}

// Shared rows [0, rows) of the tile: extended input rows from y_first, columns from x_first;
// columns [cols, stride) are zero (the generic walk multiplies them by its zero pad taps: an
// Inf there would make NaN). Threads in groups of up to 32 along a row (coalesced loads), a
// batch of rows a group at a time so that narrow pixels (converted through registers) have
// eight loads in flight per thread; float pixels go by cp.async, all in flight anyway.
// max_full: the widest tile in chunks of 32 columns the chunked loaders (load_interior,
// load_edge) are compiled for: 4 for the unrolled walks (at most 128 + 10 columns, stride within
// the tail chunk: the loaders' code as before the pad chunk, whose tests, hoisted, cost the uint8
// K = 3 walk at its 64 registers 8 bytes of spills), 6 with a pad chunk for the row, column and
// generic walks and the separable tile (the row pass up to kw = 96: 223 columns, stride 228;
// kw = 61..64: 188..191 columns, stride 196; the tile's kw = 29..32: 156..159 columns, stride
// 164). Wider: the loaders below.
template <typename in_t, int max_full = 6>
__device__ GPUCONV_INLINE void load_tile(const in_t* __restrict__ plane, const window_map& m, long long y_first,
                                         long long x_first, int rows, int cols, int stride, float* sm) {
  static_assert(max_full >= 4 && max_full <= 6, "load_tile: the chunked loaders take 4 to 6 chunks");
  constexpr int batch = 4;  // rows a group at a time (narrow pixels: loads in flight per thread)
  const int threads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  // (shifts and masks: a division by per_row is ~20 instructions a thread; fewer than 32 threads
  // make one group, g = 0 and l = tid)
  const bool few = threads < 32;
  const int per_row = few ? threads : 32, groups = few ? 1 : threads >> 5;
  const int g = few ? 0 : tid >> 5, l = few ? tid : tid & 31;
  if (g >= groups) return;
  const bool inside_x = x_first >= 0 && x_first + cols <= m.width;
  const float outside = m.border == boundary::zero ? 0.f : m.constant_value;
  // (the chunked loaders: full chunks of 32 columns, a tail chunk, and at most one chunk of pad
  // columns after it)
  constexpr bool pad_chunk = max_full > 4;
  constexpr int chunks_past = pad_chunk ? 2 : 1;
  if (inside_x && y_first >= 0 && y_first + rows <= m.height && per_row == 32 && stride <= 32 * (cols / 32 + chunks_past)) {
    const in_t* src = plane + (y_first + g) * m.width + x_first + l;
    switch (cols / 32) {
      case 1: return load_interior<1, pad_chunk>(src, m.width, g, l, groups, rows, cols, stride, sm);
      case 2: return load_interior<2, pad_chunk>(src, m.width, g, l, groups, rows, cols, stride, sm);
      case 3: return load_interior<3, pad_chunk>(src, m.width, g, l, groups, rows, cols, stride, sm);
      case 4: return load_interior<4, pad_chunk>(src, m.width, g, l, groups, rows, cols, stride, sm);
      default: break;  // wider tiles: below
    }
    if constexpr (max_full >= 5)
      if (cols / 32 == 5) return load_interior<5, pad_chunk>(src, m.width, g, l, groups, rows, cols, stride, sm);
    if constexpr (max_full >= 6)
      if (cols / 32 == 6) return load_interior<6, pad_chunk>(src, m.width, g, l, groups, rows, cols, stride, sm);
  }
  if constexpr (!std::is_same_v<in_t, float>) {
    if (per_row == 32 && stride <= 32 * (cols / 32 + chunks_past)) {
      if (cols / 32 == 4) return load_edge<4, pad_chunk>(plane, m, y_first, x_first, inside_x, g, l, groups, rows, cols, stride, sm, outside);
      if constexpr (max_full >= 5)
        if (cols / 32 == 5) return load_edge<5, pad_chunk>(plane, m, y_first, x_first, inside_x, g, l, groups, rows, cols, stride, sm, outside);
      if constexpr (max_full >= 6)
        if (cols / 32 == 6) return load_edge<6, pad_chunk>(plane, m, y_first, x_first, inside_x, g, l, groups, rows, cols, stride, sm, outside);
    }
  }
  if constexpr (std::is_same_v<in_t, float>) {
    // Tiles up to float_columns x 32 columns wide (the unrolled walks' up to ~28 taps; the
    // row, column and generic walks' and the separable tile's up to kw = 92) where every
    // element outside the image is 0 (zero border, a constant of 0; the other borders map every element into the image): a thread's columns resolved once
    // (source column, and 4 or 0 bytes to copy: cp.async zero-fills what it does not copy, so
    // pad columns and pixels outside the image need no branch), then per row one boundary
    // lookup and per element one copy at a fixed offset from the row's shared address (taken
    // once in asm: ptxas otherwise recomputes the shared window's base at every element).
    // Resolving each element's column, branch and shared address in the loop below made
    // loading ~50% of a 4096^2 K = 3 warp's instructions and ~3000 of a one-warp 28^2
    // block's ~4800 (docs/notes-conv.md).
    constexpr int float_columns = max_full + 1;
    if (stride <= float_columns * per_row && (m.border != boundary::constant || m.constant_value == 0.f)) {
      int col[float_columns];          // the source column (0 where nothing is copied)
      unsigned bytes[float_columns];   // 4: copy, 0: zero-fill; ~0u: past the stride (no element)
#pragma unroll
      for (int k = 0; k < float_columns; ++k) {
        const int c = l + k * per_row;
        const int x = c >= stride || c >= cols ? -1
                      : inside_x               ? int(x_first + c)
                                               : border_index(x_first + c, (int)m.width, m.border);
        col[k] = x < 0 ? 0 : x;
        bytes[k] = c >= stride ? ~0u : x < 0 ? 0u : 4u;
      }
      const bool inside_y = y_first >= 0 && y_first + rows <= m.height;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      const unsigned base = shared_address(sm + l);
      const unsigned step = 4u * unsigned(per_row);
#endif
      if (inside_x && per_row == 32) {
        // the tile's columns inside the image: a thread's sources at fixed offsets from its
        // row's first (k * 32 floats), so each element is one copy (or, for a pad column or a
        // row outside the image, one store of 0: no address past the image is formed)
        for (int r = g; r < rows; r += groups) {
          const int y = inside_y ? int(y_first + r) : border_index(y_first + r, (int)m.height, m.border);
          const float* src = plane + (long long)(y < 0 ? 0 : y) * m.width + x_first + l;
          const bool row_ok = y >= 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
          const unsigned dst = base + 4u * unsigned(r * stride);
#pragma unroll
          for (int k = 0; k < float_columns; ++k) {
            if (bytes[k] == ~0u) continue;
            if (row_ok && bytes[k])
              asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst + 128u * k), "l"(src + 32 * k) : "memory");
            else
              asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(dst + 128u * k), "f"(0.f) : "memory");
          }
#else
#pragma unroll
          for (int k = 0; k < float_columns; ++k)
            if (bytes[k] != ~0u) sm[r * stride + l + 32 * k] = (row_ok && bytes[k]) ? src[32 * k] : 0.f;
#endif
        }
        return;
      }
      for (int r = g; r < rows; r += groups) {
        const int y = inside_y ? int(y_first + r) : border_index(y_first + r, (int)m.height, m.border);
        const float* src = plane + (long long)(y < 0 ? 0 : y) * m.width;
        const unsigned row_bytes = y < 0 ? 0u : ~0u;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        const unsigned dst = base + 4u * unsigned(r * stride);
#pragma unroll
        for (int k = 0; k < float_columns; ++k)
          if (bytes[k] != ~0u)
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst + unsigned(k) * step),
                         "l"(src + col[k]), "r"(bytes[k] & row_bytes)
                         : "memory");
#else
#pragma unroll
        for (int k = 0; k < float_columns; ++k)
          if (bytes[k] != ~0u) sm[r * stride + l + k * per_row] = (bytes[k] & row_bytes) ? src[col[k]] : 0.f;
#endif
      }
      return;
    }
  }
  if constexpr (!std::is_same_v<in_t, float>) {
    // Narrow pixels pass through registers (no cp.async below 4 bytes): a thread's columns of a
    // batch of rows are all loaded before any is converted and stored, so that up to
    // batch x narrow_columns loads are in flight at once instead of one batch per column
    // (a uint8 4096^2 K = 3 plan ran at half the float one's rate when each column waited on
    // its loads). Tiles up to narrow_columns x 32 columns wide, the direct and separable ones.
    constexpr int narrow_columns = 5;
    if (stride <= narrow_columns * per_row) {
      int col[narrow_columns];  // -3: past the stride, -2: a pad column, -1: outside, else the image column
#pragma unroll
      for (int k = 0; k < narrow_columns; ++k) {
        const int c = l + k * per_row;
        col[k] = c >= stride ? -3
                 : c >= cols ? -2
                 : inside_x  ? int(x_first + c)
                             : border_index(x_first + c, (int)m.width, m.border);
      }
      for (int r0 = g; r0 < rows; r0 += batch * groups) {
        const in_t* src[batch];
        unsigned v[batch][narrow_columns];  // (32-bit words, as in load_interior)
#pragma unroll
        for (int q = 0; q < batch; ++q) {
          const int r = r0 + q * groups;
          const int y = r < rows ? border_index(y_first + r, (int)m.height, m.border) : -1;
          src[q] = y < 0 ? nullptr : plane + (long long)y * m.width;
#pragma unroll
          for (int k = 0; k < narrow_columns; ++k) v[q][k] = (src[q] && col[k] >= 0) ? unsigned(src[q][col[k]]) : 0u;
        }
#pragma unroll
        for (int q = 0; q < batch; ++q) {
          const int r = r0 + q * groups;
          if (r >= rows) continue;
          float* row = sm + (long long)r * stride + l;
#pragma unroll
          for (int k = 0; k < narrow_columns; ++k) {
            if (col[k] == -3) continue;
            row[k * per_row] = col[k] == -2 ? 0.f : (src[q] && col[k] >= 0) ? pixel_value(v[q][k]) : outside;
          }
        }
      }
      return;
    }
  }
  if constexpr (!std::is_same_v<in_t, float>) {
    // Wider tiles of narrow pixels (the row pass past kw = 96: 7 chunks and more; a block of
    // fewer than 32 threads past 5 columns a thread): a batch of rows times wide_columns of a
    // thread's columns, every load issued before any is used, from an address inside the image
    // whatever the boundary (row 0 or column 0 where the element lies outside, or past the tile),
    // the outside elements kept as bits. (Each column loaded and used in turn, 4 loads in flight a
    // thread, put the uint8 FMA passes at kw >= 97 at 1.15-1.21x fp32's time, session 78; the FFT
    // passes' row kernel gained 148 -> 90 us from the same change, session 79.)
    constexpr int wide_columns = 4;
    for (int r0 = g; r0 < rows; r0 += batch * groups) {
      const in_t* src[batch];
      unsigned row_in = 0;  // bit q: row q of the batch is the image's (and the tile's)
#pragma unroll
      for (int q = 0; q < batch; ++q) {
        const int r = r0 + q * groups;
        const int y = r < rows ? border_index(y_first + r, (int)m.height, m.border) : -1;
        src[q] = plane + (long long)(y < 0 ? 0 : y) * m.width;
        row_in |= y >= 0 ? 1u << q : 0u;
      }
      for (int c0 = l; c0 < stride; c0 += wide_columns * per_row) {
        int col[wide_columns];  // the image column (0 where the element is not the image's)
        unsigned col_in = 0;    // bit j: column j is the image's
#pragma unroll
        for (int j = 0; j < wide_columns; ++j) {
          const int c = c0 + j * per_row;
          const int x = c >= cols ? -1 : inside_x ? int(x_first + c) : border_index(x_first + c, (int)m.width, m.border);
          col[j] = x < 0 ? 0 : x;
          col_in |= x >= 0 ? 1u << j : 0u;
        }
        unsigned v[batch][wide_columns];  // (32-bit words, as in load_interior)
#pragma unroll
        for (int q = 0; q < batch; ++q)
#pragma unroll
          for (int j = 0; j < wide_columns; ++j) v[q][j] = unsigned(src[q][col[j]]);
#pragma unroll
        for (int q = 0; q < batch; ++q) {
          const int r = r0 + q * groups;
          if (r >= rows) break;
          float* row = sm + (long long)r * stride;
#pragma unroll
          for (int j = 0; j < wide_columns; ++j) {
            const int c = c0 + j * per_row;
            if (c >= stride) break;
            row[c] = c >= cols ? 0.f : (row_in >> q & col_in >> j & 1u) ? pixel_value(v[q][j]) : outside;  // pad: 0
          }
        }
      }
    }
  } else {
    for (int r0 = g; r0 < rows; r0 += batch * groups) {
      const in_t* src[batch];  // the batch's source rows (null: outside the image, or past the tile)
      bool live[batch];
#pragma unroll
      for (int q = 0; q < batch; ++q) {
        const int r = r0 + q * groups;
        live[q] = r < rows;
        const int y = live[q] ? border_index(y_first + r, (int)m.height, m.border) : -1;
        src[q] = y < 0 ? nullptr : plane + (long long)y * m.width;
      }
      for (int c = l; c < stride; c += per_row) {
        const int col = c >= cols ? -2 : inside_x ? int(x_first + c) : border_index(x_first + c, (int)m.width, m.border);
#pragma unroll
        for (int q = 0; q < batch; ++q) {
          if (!live[q]) continue;
          float* dst = sm + (long long)(r0 + q * groups) * stride + c;
          if (col == -2) *dst = 0.f;                         // the pad columns
          else if (src[q] && col >= 0) copy_pixel(dst, src[q] + col);
          else *dst = outside;
        }
      }
    }
  }
}

}  // namespace gpuconv::conv
