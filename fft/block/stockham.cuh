// Block layer: an N-point complex FFT of one row spread over T threads, P = N/T values each.
//
// Stockham autosort passes (no bit reversal). A pass of radix R and stride Ns runs N/R
// butterflies; butterfly b (thread t runs b = t + T*u, u < P/R) reads x[b + r*N/R],
// multiplies by W_{Ns*R}^{(b mod Ns)*r}, runs fft_t<R> and writes y[(b - b mod Ns)*R + b mod Ns + r*Ns].
// Ns goes 1, P, P^2, ... with radix P except the last pass, which takes what is left.
//
// The first pass reads x[t + T*m] and the last writes X[t + T*m] (m = u + r*P/R), so both stay
// in registers and the kernels load and store them coalesced; only the passes in between
// exchange through shared memory. Shared indices are padded by one slot per 16 values
// (a + a/16), which keeps the strided pass writes and the row-interleaved reads of a
// half-warp on distinct banks for P = 16.
// Twiddles W_n^e (n = 2N) come from the plan's table, computed in double on the host; the
// inverse conjugates them through special_mul<inverse>; twiddle_load says how they are read
// (twiddle_load_late for kernels that cannot afford to keep them in registers).
#pragma once
#include "../device/memory.cuh"
#include "../thread/fft.hpp"

namespace gpuconv::fft {

// rows_across_warps: the T threads of a row are not lanes of one warp (a kernel that puts
// one row per lane, for coalesced loads); the passes then synchronise the whole block, as do
// rows of T > 32 threads (the real transforms' blocks hold one such row: a named barrier per
// row, tried, reserves all 16 barriers when its id is computed, and an SM holds 4 such blocks).
// pad_shift: shared indices are padded by one slot per 2^pad_shift values.
// line_stride: 0 for a row of its own (padded as above); s > 0 for a line of a 2D array in
// shared memory whose element i sits at i * s, unpadded (a column of a row-major tile, or a row
// with s = 1), where the lanes of a warp work on neighbouring lines and not on one (the
// mixed-side slice kernels, conv/slices3d.cu): the line's own storage is its exchange buffer.
// pass_tables: the twiddle table holds, after its 2N values W_{2N}^e, each later pass's
// twiddles in the order the threads read them (append_pass_tables), so that a warp's loads are
// contiguous instead of a gather at a stride of r * 2N / (Ns R) values (over up to 32 cache lines).
template <int N, int T, bool inverse, typename twiddle_load = twiddle_load_ro, bool rows_across_warps = false,
          int pad_shift = 4, bool pass_tables = false, int line_stride = 0>
struct block_fft_t {
  static_assert(is_pow2(N) && is_pow2(T) && T >= 1 && T <= N, "block_fft_t: bad shape");
  static constexpr int threads_per_row = T;
  static constexpr int items_per_thread = N / T;
  static constexpr int P = items_per_thread;
  static constexpr int table_n = 2 * N;  // twiddle table: W_{2N}^e, e < 2N
  // complex values of shared memory one row needs (0 when the row stays in registers)
  static constexpr int row_shared_elems = T == 1 ? 0 : N + N / 16;

  using value_t = complex_t<float>;
  using items_t = array_t<value_t, P>;

  // The passes after the first: Ns = P, then Ns * R, radix R = min(N / Ns, P). With pass_tables,
  // pass Ns's twiddle W_{Ns R}^{j r} (j < Ns, 1 <= r < R) sits at pass_table_offset(Ns) + (r - 1) Ns + j;
  // pass_table_offset(N) is the table's whole length.
  static constexpr int radix_at(int Ns) { return (N / Ns) < P ? (N / Ns) : P; }
  static constexpr int pass_table_offset(int target) {
    int offset = table_n;
    for (int ns = P; ns < N && ns != target; ns *= radix_at(ns)) offset += pass_tables ? (radix_at(ns) - 1) * ns : 0;
    return offset;
  }
  // the plan's host side: `table` holds the 2N values W_{2N}^e; appends the passes' tables (the
  // same values, gathered, so results do not change)
  template <typename vector_t>
  static void append_pass_tables(vector_t& table) {
    if constexpr (pass_tables) {
      for (int ns = P; ns < N; ns *= radix_at(ns)) {
        const int R = radix_at(ns), tw_step = table_n / (ns * R);
        for (int r = 1; r < R; ++r)
          for (int j = 0; j < ns; ++j) {
            const auto w = table[std::size_t(j) * r * tw_step];
            table.push_back(w);
          }
      }
    }
  }

  static_assert(pad_shift >= 4, "block_fft_t: the row buffer holds N + N/16 values");
  static __device__ GPUCONV_INLINE int padded(int a) {
    if constexpr (line_stride > 0) return a * line_stride;
    else return a + (a >> pad_shift);
  }

  static __device__ GPUCONV_INLINE void sync() {
    if constexpr (T <= 32 && !rows_across_warps) {
      __syncwarp();
    } else {
      __syncthreads();
    }
  }

  // On entry v[m] = x[t + T*m]; on exit v[m] = X[t + T*m]. Every thread of the block calls it.
  static __device__ GPUCONV_INLINE void run(items_t& v, value_t* row_shared, int t, const value_t* table) {
    array_t<items_t, 1> rows;
    rows[0] = v;
    run_rows<1, 0>(rows, row_shared, t, table);
    v = rows[0];
  }

  // Q rows at once, row q through its own buffer at row_shared + q * row_step: each pass's
  // exchange is one for all Q rows (one barrier pair, Q times the shared loads in flight) where
  // run() would take Q of them. v[q] as run()'s v.
  template <int Q, int row_step>
  static __device__ GPUCONV_INLINE void run_rows(array_t<items_t, Q>& v, value_t* row_shared, int t, const value_t* table) {
    static_for<Q>([&](auto q) { v[q.value] = fft_t<float, P, inverse>{}(v[q.value]); });  // pass 1: Ns = 1, no twiddles
    if constexpr (T > 1) {
      static_for<Q>([&](auto q) {
        static_for<P>([&](auto r) { row_shared[q.value * row_step + padded(t * P + r.value)] = v[q.value][r.value]; });
      });
      pass<P, Q, row_step>(v, row_shared, t, table);
    }
  }

 private:
  template <int Ns, int Q, int row_step>
  static __device__ GPUCONV_INLINE void pass(array_t<items_t, Q>& v, value_t* row_shared, int t, const value_t* table) {
    constexpr int R = radix_at(Ns);
    constexpr int B = P / R;  // butterflies per thread
    constexpr bool last = Ns * R == N;
    constexpr int stride_in = N / R;
    constexpr int tw_step = table_n / (Ns * R);
    sync();  // the previous pass's writes are visible
    array_t<items_t, Q> w;
    static_for<Q>([&](auto q) {
      static_for<B>([&](auto u) {
        const int b = t + T * u.value;
        static_for<R>([&](auto r) {
          w[q.value][u.value * R + r.value] = row_shared[q.value * row_step + padded(b + r.value * stride_in)];
        });
      });
    });
    if constexpr (!last) sync();  // everyone has read before anyone overwrites
    static_for<Q>([&](auto q) {
      static_for<B>([&](auto u) {
        const int b = t + T * u.value;
        const int j = b & (Ns - 1);
        array_t<value_t, R> y;
        static_for<R>([&](auto r) {
          constexpr int rr = decltype(r)::value;
          if constexpr (rr == 0) {
            y[0] = w[q.value][u.value * R];
          } else {
            constexpr int offset = pass_table_offset(Ns);
            const value_t* tw = pass_tables ? table + offset + (rr - 1) * Ns + j : table + j * rr * tw_step;
            y[rr] = special_mul<inverse>(w[q.value][u.value * R + rr], twiddle_load::load(tw));
          }
        });
        y = fft_t<float, R, inverse>{}(y);
        if constexpr (last) {
          static_for<R>([&](auto r) { v[q.value][u.value + r.value * B] = y[r.value]; });
        } else {
          static_for<R>([&](auto r) { row_shared[q.value * row_step + padded((b - j) * R + j + r.value * Ns)] = y[r.value]; });
        }
      });
    });
    if constexpr (!last) pass<Ns * R, Q, row_step>(v, row_shared, t, table);
  }
};

}  // namespace gpuconv::fft
