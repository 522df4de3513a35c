// Kernel layer of the convolution: the fused tile kernel for 128-tiles on half a spectrum.
//
// fused_tile_kernel carries two real tiles as one complex T x T transform, which at T = 128
// holds 128 KB of values (in registers) and 140 KB of shared memory: one 512-thread block per
// SM, all of its warps in the same phase (loads, FFT passes, stores). This kernel holds ONE real
// tile and only the half of its spectrum that a real tile needs (ky = 0..64), in 64 lines:
// 70 KB of shared memory and 512 threads of 64 registers, so two blocks, in different phases,
// share an SM.
//
//   columns: column-line c (c < 64) carries tile columns c and c + 64 as one complex column
//     z_c(y) = a(y, c) + i a(y, c + 64); a 128-point FFT gives Z_c(ky), from which
//     A(ky, c) = (Z_c(ky) + conj(Z_c(-ky))) / 2 and A(ky, c + 64) = (Z_c(ky) - conj(Z_c(-ky))) / 2i
//     are the two columns' spectra (read apart in the transpose).
//   rows: row-line r (1 <= r < 64) transforms A(r, x) along x; row-line 0 carries the two real
//     rows A(0, x) + i A(64, x) (real columns have real spectra at ky = 0 and 64) and
//     separates them after its FFT through a 128-value mirror buffer:
//     S0(kx) = (P(kx) + conj(P(-kx))) / 2, S64(kx) = (P(kx) - conj(P(-kx))) / 2i.
//   times the kernel's spectrum K[kx][ky] (fused_tiles::spectrum, rows ky <= 64 of it), then
//   back the same way: inverse rows; the column spectra for ky > 64 are the conjugates of
//   64 - (ky - 64) (the output is real); inverse columns give out(y, c) + i out(y, c + 64).
//
// Loads, stores, boundary rules, the pixel types and the twiddle table are fused_tile.cuh's.
// At 64 registers a thread spills 236 bytes (shared offsets and twiddles of the FFT passes).
// Which maps run on it: fused_tiles::use_half (fused.cu); measurements: docs/notes-conv.md
// "Half-spectrum 128-tiles (session 54)".
#pragma once
#include "fused_tile.cuh"

namespace gpuconv::conv {

struct fused_half_policy {
  static constexpr int tile = 128;
  static constexpr int lines = 64;            // column pairs, then rows ky = 0..63
  static constexpr int items_per_thread = 16;
  static constexpr int threads_per_line = tile / items_per_thread;  // 8
  static constexpr int block_threads = lines * threads_per_line;    // 512
  static constexpr int line_stride = tile + tile / 16 + 1;           // 137: odd, as fused_policy's
  static constexpr int mirror_offset = lines * line_stride;         // the row-0 mirror (128 values)
  static constexpr int shared_memory_bytes = (mirror_offset + tile) * 8 + 48;  // + the tile's origin
  // two blocks an SM: 64 registers (236 bytes spilled a thread); 1 (tuning builds): 128
  // registers, no spills, one block
#ifndef GPUCONV_FUSED_HALF_MIN_BLOCKS
#define GPUCONV_FUSED_HALF_MIN_BLOCKS 2
#endif
  static constexpr int min_blocks = GPUCONV_FUSED_HALF_MIN_BLOCKS;
};

template <typename in_t, typename out_t>
__global__ void __launch_bounds__(fused_half_policy::block_threads, fused_half_policy::min_blocks)
fused_half_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, tile_map m,
                  const fft::complex_t<float>* __restrict__ spectra, const fft::complex_t<float>* __restrict__ table) {
  using cf = fft::complex_t<float>;
  using policy = fused_half_policy;
  constexpr int T = policy::tile, H = policy::lines, TL = policy::threads_per_line, I = policy::items_per_thread;
  constexpr int stride = policy::line_stride;
  using twiddle_load = fft::twiddle_load_late;
  using forward_t = fft::block_fft_t<T, TL, false, twiddle_load, true>;
  using inverse_t = fft::block_fft_t<T, TL, true, twiddle_load, true>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  cf* mirror = shared + policy::mirror_offset;
  auto* origin = reinterpret_cast<detail::tile_origin*>(mirror + T);

  const long long tiles = m.tiles_per_kernel * m.kernels;
  for (long long g = blockIdx.x; g < tiles; g += gridDim.x) {
    // this thread's line and place in it, laundered through an opaque move each tile: the
    // shared and spectrum offsets built from them are then computed where they are used,
    // instead of hoisted out of the loop and held (spilled at 64 registers) across the FFTs
    int line = (int)threadIdx.x % H, t = (int)threadIdx.x / H;
    asm volatile("mov.u32 %0, %0;" : "+r"(line));
    asm volatile("mov.u32 %0, %0;" : "+r"(t));
    cf* mine = shared + line * stride;  // this line's scratch in the FFTs
    const cf* spectrum = spectra + g / m.tiles_per_kernel * T * T;
    if (threadIdx.x == 0) *origin = detail::origin_of(m, g);
    __syncthreads();
    fft::array_t<cf, I> v;
    {
      float a[I], b[I];
      detail::load_column<I, TL>(in, m, true, *origin, line, t, a);
      detail::load_column<I, TL>(in, m, true, *origin, line + H, t, b);
      fft::static_for<I>([&](auto j) { v[j.value] = {a[j.value], b[j.value]}; });
    }
    // columns: v[j] = Z_line(ky = t + TL*j), into shared[pair][ky]
    forward_t::run(v, mine, t, table);
    __syncthreads();
    fft::static_for<I>([&](auto j) { mine[t + TL * j.value] = v[j.value]; });
    __syncthreads();
    // rows: this line is ky = line (line 0: ky = 0 and 64 packed); v[j] = A(ky, x = t + TL*j),
    // x < 64 for j < I/2 (pair c = x) and x = c + 64 for j + I/2
    {
      const int r = line, rm = r == 0 ? H : T - r;
      fft::static_for<I / 2>([&](auto j) {
        const int c = t + TL * j.value;
        const cf u = shared[c * stride + r], w = shared[c * stride + rm];
        if (r == 0) {
          v[j.value] = {u.re, w.re};
          v[j.value + I / 2] = {u.im, w.im};
        } else {
          v[j.value] = {0.5f * (u.re + w.re), 0.5f * (u.im - w.im)};             // (u + conj w) / 2
          v[j.value + I / 2] = {0.5f * (u.im + w.im), 0.5f * (w.re - u.re)};     // (u - conj w) / 2i
        }
      });
    }
    __syncthreads();  // the transposed reads are done before the row FFTs use the lines
    forward_t::run(v, mine, t, table);  // v[j] = A(ky = line, kx = t + TL*j)
    if (line == 0) fft::static_for<I>([&](auto j) { mirror[t + TL * j.value] = v[j.value]; });
    __syncthreads();  // the mirror is written; the forward rows' shared reads are done
    if (line == 0) {
      fft::static_for<I>([&](auto j) {
        const int kx = t + TL * j.value;
        const cf p = v[j.value], q = mirror[(T - kx) & (T - 1)];
        const cf s0 = {0.5f * (p.re + q.re), 0.5f * (p.im - q.im)};   // (p + conj q) / 2
        const cf s64 = {0.5f * (p.im + q.im), 0.5f * (q.re - p.re)};  // (p - conj q) / 2i
        const cf y0 = s0 * twiddle_load::load(spectrum + kx * T), y64 = s64 * twiddle_load::load(spectrum + kx * T + H);
        v[j.value] = {y0.re - y64.im, y0.im + y64.re};  // y0 + i y64
      });
    } else {
      fft::static_for<I>([&](auto j) {
        v[j.value] = v[j.value] * twiddle_load::load(spectrum + (t + TL * j.value) * T + line);
      });
    }
    inverse_t::run(v, mine, t, table);  // v[j] = W(ky = line, x = t + TL*j) (line 0: W(0, x) + i W(64, x))
    __syncthreads();
    fft::static_for<I / 2>([&](auto j) {  // shared[pair c][ky] for x = c, [pair c][64 + ky] for x = c + 64
      const int c = t + TL * j.value;
      shared[c * stride + line] = v[j.value];
      shared[c * stride + H + line] = v[j.value + I / 2];
    });
    __syncthreads();
    // column-line `line` = pair c: Z'(ky) = W(ky, c) + i W(ky, c + 64), by conjugate symmetry
    // above 64, from the packed row at 0 and 64
    fft::static_for<I>([&](auto j) {
      const int ky = t + TL * j.value;
      const int r = j.value < I / 2 ? ky : (T - ky) & (H - 1);
      const cf a = mine[r], b = mine[H + r];
      if (j.value < I / 2) {
        v[j.value] = ky == 0 ? cf{a.re, b.re} : cf{a.re - b.im, a.im + b.re};  // a + i b
      } else {
        v[j.value] = ky == H ? cf{a.im, b.im} : cf{a.re + b.im, b.re - a.im};  // conj a + i conj b
      }
    });
    __syncthreads();  // the transposed reads are done before the column FFTs use the lines
    inverse_t::run(v, mine, t, table);  // v[j] = out(y = t + TL*j, line) + i out(y, line + 64)
    {
      float a[I], b[I];
      fft::static_for<I>([&](auto j) {
        a[j.value] = v[j.value].re;
        b[j.value] = v[j.value].im;
      });
      detail::store_column<I, TL>(out, m, true, *origin, line, t, a);
      detail::store_column<I, TL>(out, m, true, *origin, line + H, t, b);
    }
    __syncthreads();  // the origin and the lines are reused by the next tile
  }
}

}  // namespace gpuconv::conv
