// taps_rows, widen_row and narrow_row, built once per ISA (AVX-512, AVX2+FMA, baseline x86-64) and dispatched at run
// time on fft::host::selected_host_isa() (the CPU's level, or a lower one GPUCONV_CPU_ISA asks for): one portable
// binary, whose every path can be tested on one machine.
#include "cpu_rows.hpp"

#include <type_traits>
#include <utility>

#include "../fft/host/isa.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// The helpers below are always inlined into each ISA's version; GCC's note that a 64-byte vector
// argument's ABI differs without AVX-512 is about calls that never happen.
#pragma GCC diagnostic ignored "-Wpsabi"

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
// name(params) compiled three times from its body (AVX-512, AVX2 + FMA, baseline), and the
// exported name calling the one selected_host_isa() names (one branch a call; callers pass a
// row or more a call).
#define GPUCONV_PER_ISA(name, params, args, ...)                               \
  namespace {                                                                 \
  template <int L>                                                            \
  inline __attribute__((always_inline)) void name##_body params __VA_ARGS__    \
  [[gnu::target("arch=x86-64-v4")]] void name##_v4 params { name##_body<16> args; } \
  [[gnu::target("arch=x86-64-v3")]] void name##_v3 params { name##_body<8> args; }  \
  void name##_base params { name##_body<4> args; }                            \
  }                                                                           \
  void name params {                                                          \
    switch (fft::host::selected_host_isa()) {                                 \
      case fft::host::host_isa::avx512: return name##_v4 args;                \
      case fft::host::host_isa::avx2: return name##_v3 args;                  \
      default: return name##_base args;                                       \
    }                                                                         \
  }
// column_rows_avx512 (FMAs) gives taps_rows's bits only where taps_rows runs as the AVX-512
// version too; the sanitizer build has one version (baseline x86-64: separate multiply and add)
#define GPUCONV_COLUMN_AVX512 1
#else
#define GPUCONV_PER_ISA(name, params, args, ...)                               \
  namespace {                                                                 \
  template <int L>                                                            \
  inline __attribute__((always_inline)) void name##_body params __VA_ARGS__    \
  }                                                                           \
  void name params { name##_body<4> args; }
#endif

namespace gpuconv::conv {

namespace {

// L floats: one register of the ISA each version is built for (L = 16 on AVX-512, 8 on AVX2, 4
// on the baseline; GPUCONV_PER_ISA below). GCC lowers a generic vector wider than the
// registers through the stack (16 floats on AVX2: 10-20x slower, docs/benchmarks.md).
template <int L>
struct vecs {
  typedef float f __attribute__((vector_size(4 * L)));
  typedef float f_unaligned __attribute__((vector_size(4 * L), aligned(4)));
  typedef int i __attribute__((vector_size(4 * L)));
  typedef std::uint8_t u8 __attribute__((vector_size(L)));
  typedef std::uint16_t u16 __attribute__((vector_size(2 * L)));
  typedef std::uint8_t u8_unaligned __attribute__((vector_size(L), aligned(1)));
  typedef std::uint16_t u16_unaligned __attribute__((vector_size(2 * L), aligned(2)));
};
typedef vecs<16>::f v16;  // AVX-512's register (the intrinsics below)

// a + c * x. With FMA in the version's ISA (L >= 8: AVX2 + FMA, AVX-512) one rounding, written
// out (fmaf, the vector FMA builtins); without it (the baseline: L = 4) two. The paths that must
// agree to the bit (taps_rows, column_rows, row_taps and the explicit AVX-512 FMAs) rested on
// the compiler contracting `a += c * x` everywhere alike: GCC 12 does (its build passes the tests,
// and fails them with -ffp-contract=off), the H200 host's GCC 13 build failed them. This file is
// built with -ffp-contract=off (conv/CMakeLists.txt): nothing is fused but these.
template <int L>
inline __attribute__((always_inline)) float madd(float a, float c, float x) {
  if constexpr (L >= 8) return __builtin_fmaf(c, x, a);
  else return a + c * x;
}
template <int L>
inline __attribute__((always_inline)) typename vecs<L>::f madd(typename vecs<L>::f a, float c, typename vecs<L>::f x) {
#if defined(__x86_64__)
  // The builtins behind _mm512_fmadd_ps / _mm256_fmadd_ps, on GCC's generic vectors: the
  // intrinsics' target attributes would not inline here, the builtins expand in the caller (a
  // version built for the ISA); lane-by-lane fmaf measured up to 3x slower here (K = 15).
  // c in every lane as c times a vector of ones, which GCC folds to a broadcast ({} + c keeps an
  // add of zero, not an identity for -0; a lane loop was not folded)
  const typename vecs<L>::f cs = c * (typename vecs<L>::f{} + 1.f);
  if constexpr (L == 16) {
    return __builtin_ia32_vfmaddps512_mask(x, cs, a, (unsigned short)0xffff, 4);
  } else if constexpr (L == 8) {
    return __builtin_ia32_vfmaddps256(x, cs, a);
  } else
#endif
  {
    return a + c * x;
  }
}

template <int L>
inline __attribute__((always_inline)) typename vecs<L>::f load(const float* p) {
  return *reinterpret_cast<const typename vecs<L>::f_unaligned*>(p);
}
template <int L>
inline __attribute__((always_inline)) void store(float* p, typename vecs<L>::f v) {
  *reinterpret_cast<typename vecs<L>::f_unaligned*>(p) = v;
}

}  // namespace

namespace {

#if defined(__x86_64__)
// put() below for uint8/uint16 on the baseline (SSE2), where GCC lowers the generic vectors'
// int32 -> uint8/uint16 conversion (and byte shuffles) to one extract/shift/or per value:
// vmaxps (NaN and negatives to 0, as put's first clamp: the second operand is returned for a
// NaN), vminps (the top), vcvtps2dq (round half to even, the default rounding mode: put's
// rounding for values in range), then packs.
inline __attribute__((always_inline)) __m128i rounded_sse2(__m128 v, float top) {
  return _mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(v, _mm_setzero_ps()), _mm_set1_ps(top)));
}
inline __attribute__((always_inline)) void put_sse2(std::uint8_t* p, __m128 v) {
  const __m128i q = rounded_sse2(v, 255.f);
  const __m128i w = _mm_packs_epi32(q, q);  // 0..255 fits int16
  const int bytes = _mm_cvtsi128_si32(_mm_packus_epi16(w, w));
  __builtin_memcpy(p, &bytes, 4);
}
inline __attribute__((always_inline)) void put_sse2(std::uint16_t* p, __m128 v) {
  // 0..65535 shifted into int16's range for the signed pack (SSE2 has no unsigned one), then back
  const __m128i q = _mm_sub_epi32(rounded_sse2(v, 65535.f), _mm_set1_epi32(32768));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_xor_si128(_mm_packs_epi32(q, q), _mm_set1_epi16(-32768)));
}
#endif

// L outputs to memory: float as is; uint8/uint16 rounded half to even and saturated as in
// narrow_loop below (clamp first, NaN to 0, then the 1.5 * 2^23 rounding).
template <int L, typename T>
inline __attribute__((always_inline)) void put(T* p, typename vecs<L>::f v) {
  if constexpr (std::is_same_v<T, float>) {
    store<L>(p, v);
#if defined(__x86_64__)
  } else if constexpr (L == 4) {
    put_sse2(p, __m128(v));
#endif
  } else {
    typedef typename vecs<L>::f vf;
    constexpr float hi = sizeof(T) == 1 ? 255.f : 65535.f, magic = 12582912.f;
    const vf zero = {}, top = zero + hi;
    v = v > zero ? v : zero;
    v = v < top ? v : top;
    const typename vecs<L>::i q = __builtin_convertvector((v + magic) - magic, typename vecs<L>::i);
    if constexpr (L == 8) {
      // AVX2: the low byte / half of each int32 picked by a shuffle (vpshufb, vpermq, vpor); GCC
      // lowers the conversion below to one vpextrd/shift/or per value there (the separable pass's
      // column stores took ~30% of its time at K = 3)
      typedef T narrow __attribute__((vector_size(32)));
      typedef T picked __attribute__((vector_size(8 * sizeof(T)), aligned(sizeof(T))));
      const narrow b = (narrow)q;
      if constexpr (sizeof(T) == 1)
        *reinterpret_cast<picked*>(p) = __builtin_shufflevector(b, b, 0, 4, 8, 12, 16, 20, 24, 28);
      else
        *reinterpret_cast<picked*>(p) = __builtin_shufflevector(b, b, 0, 2, 4, 6, 8, 10, 12, 14);
    } else if constexpr (sizeof(T) == 1)
      *reinterpret_cast<typename vecs<L>::u8_unaligned*>(p) = __builtin_convertvector(q, typename vecs<L>::u8);
    else
      *reinterpret_cast<typename vecs<L>::u16_unaligned*>(p) = __builtin_convertvector(q, typename vecs<L>::u16);
  }
}

// Blocks of L V outputs over [0, n): block(t, V) for t = 0, L V, ... and, where n is not a
// multiple, one last block moved back to end at n (its first outputs computed twice, to the
// same values, instead of a scalar tail of up to L V - 1 outputs); blocks of L below L V
// outputs, scalar(t) below L.
template <int V, int L, typename B, typename S>
inline __attribute__((always_inline)) void over_blocks(long long n, B&& block, S&& scalar) {
  constexpr int width = L * V;
  if (n >= width) {
    long long t = 0;
    for (; t + width <= n; t += width) block(t, std::integral_constant<int, V>{});
    if (t < n) block(n - width, std::integral_constant<int, V>{});
  } else if (n >= L) {
    long long t = 0;
    for (; t + L <= n; t += L) block(t, std::integral_constant<int, 1>{});
    if (t < n) block(n - L, std::integral_constant<int, 1>{});
  } else {
    for (long long t = 0; t < n; ++t) scalar(t);
  }
}

// Vectors of L floats for V of 16: the same outputs a block on AVX2 (two registers for one of
// AVX-512's), as many registers (a quarter of the outputs) on the baseline's 16 SSE registers.
template <int V, int L>
constexpr int vectors_for = L == 8 ? 2 * V : V;

// Vectors of 16 outputs held across all taps in the row pass: eight chains of dependent FMAs
// instead of four, to hide the FMA's latency; AVX-512 has the 32 registers for them, AVX2
// and the baseline keep four (vectors_for: eight and four of their registers).
inline int wide_vectors() { return fft::host::selected_host_isa() == fft::host::host_isa::avx512 ? 8 : 4; }

// taps_rows's sums for kh x kw taps fixed at compile time (KH, KW > 0) or given at run time
// (KH = KW = 0): fixed counts unroll the tap loops, so that the taps stay in registers or
// become broadcast operands instead of a load and a branch per tap and block. Each output's
// sum runs over the taps in the same order whatever its block (i, then j ascending).
template <int KH, int KW, int V16, int L, typename T>
inline __attribute__((always_inline)) void taps_loop(const float* const* rows, const float* k, int kh_, int kw_,
                                                     long long n, T* out) {
  constexpr int V = vectors_for<V16, L>;
  const int kh = KH ? KH : kh_, kw = KW ? KW : kw_;
  auto block = [&](long long t, auto vectors) __attribute__((always_inline)) {
    constexpr int v_count = decltype(vectors)::value;
    typename vecs<L>::f a[v_count] = {};
    for (int i = 0; i < kh; ++i) {
      const float* r = rows[i] + t + kw - 1;
      const float* ki = k + (long long)i * kw;
      for (int j = 0; j < kw; ++j) {
        const float c = ki[j];
        const float* s = r - j;
#pragma GCC unroll 8
        for (int v = 0; v < v_count; ++v) a[v] = madd<L>(a[v], c, load<L>(s + L * v));
      }
    }
#pragma GCC unroll 8
    for (int v = 0; v < v_count; ++v) put<L>(out + t + L * v, a[v]);
  };
  auto scalar = [&](long long t) __attribute__((always_inline)) {
    float acc = 0;
    for (int i = 0; i < kh; ++i)
      for (int j = 0; j < kw; ++j) acc = madd<L>(acc, k[(long long)i * kw + j], rows[i][t + kw - 1 - j]);
    if constexpr (std::is_same_v<T, float>) out[t] = acc;
    else out[t] = saturate_round<T>(acc);
  };
  over_blocks<V, L>(n, block, scalar);
}

template <int KH, int KW, int L, typename T>
inline __attribute__((always_inline)) bool taps_if(const float* const* rows, const float* k, int kh, int kw,
                                                   long long n, T* out) {
  if (kh != KH || kw != KW) return false;
  taps_loop<KH, KW, 4, L>(rows, k, kh, kw, n, out);
  return true;
}

// The separable method's passes (one row of 1 x kw taps, kh x 1 taps over kh rows) and the
// direct method's 3 x 3 and 5 x 5 with fixed counts up to 9 taps; the rest at run time, the
// row pass (kh = 1) with wide_vectors() accumulators.
template <int L, typename T>
inline __attribute__((always_inline)) void taps_any(const float* const* rows, const float* k, int kh, int kw,
                                                    long long n, T* out) {
  if (taps_if<1, 2, L>(rows, k, kh, kw, n, out) || taps_if<1, 3, L>(rows, k, kh, kw, n, out) ||
      taps_if<1, 4, L>(rows, k, kh, kw, n, out) || taps_if<1, 5, L>(rows, k, kh, kw, n, out) ||
      taps_if<1, 6, L>(rows, k, kh, kw, n, out) || taps_if<1, 7, L>(rows, k, kh, kw, n, out) ||
      taps_if<1, 8, L>(rows, k, kh, kw, n, out) || taps_if<1, 9, L>(rows, k, kh, kw, n, out) ||
      taps_if<2, 1, L>(rows, k, kh, kw, n, out) || taps_if<3, 1, L>(rows, k, kh, kw, n, out) ||
      taps_if<4, 1, L>(rows, k, kh, kw, n, out) || taps_if<5, 1, L>(rows, k, kh, kw, n, out) ||
      taps_if<6, 1, L>(rows, k, kh, kw, n, out) || taps_if<7, 1, L>(rows, k, kh, kw, n, out) ||
      taps_if<8, 1, L>(rows, k, kh, kw, n, out) || taps_if<9, 1, L>(rows, k, kh, kw, n, out) ||
      taps_if<3, 3, L>(rows, k, kh, kw, n, out) || taps_if<5, 5, L>(rows, k, kh, kw, n, out))
    return;
  if (kh == 1 && wide_vectors() == 8) taps_loop<1, 0, 8, L>(rows, k, kh, kw, n, out);
  else taps_loop<0, 0, 4, L>(rows, k, kh, kw, n, out);
}

// The separable method's column pass for column_block output rows at once (column_rows): rows
// newest first, acc[r] sums output row column_block - 1 - r from rows[r + i] with k[i]. Row
// m feeds every r with 0 <= m - r < kh, so each row is loaded once for up to column_block
// sums (kh + 3 loads per four outputs instead of 4 kh), and each sum still takes its taps
// in the order of taps_loop (i ascending): the same results as one row at a time.
// The stores of the loops below: put(), as built for the version that runs.
template <int L>
struct put_any {
  template <typename T>
  __attribute__((always_inline)) void operator()(T* p, typename vecs<L>::f v) const { put<L>(p, v); }
};

template <int KH, int V16, int R, int L, typename T, typename Put = put_any<L>>
inline __attribute__((always_inline)) void column_loop(const float* const* rows, const float* k, int kh_, long long n,
                                                       T* out, long long out_stride) {
  constexpr int V = vectors_for<V16, L>;
  const int kh = KH ? KH : kh_;
  auto block = [&](long long t, auto vectors) __attribute__((always_inline)) {
    constexpr int v_count = decltype(vectors)::value;
    typename vecs<L>::f a[R][v_count] = {};
    auto feed = [&](int m, bool all) __attribute__((always_inline)) {
      typename vecs<L>::f x[v_count];
#pragma GCC unroll 8
      for (int v = 0; v < v_count; ++v) x[v] = load<L>(rows[m] + t + L * v);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        if (all || (r <= m && m - r < kh)) {
          const float c = k[m - r];
#pragma GCC unroll 8
          for (int v = 0; v < v_count; ++v) a[r][v] = madd<L>(a[r][v], c, x[v]);
        }
    };
    int m = 0;
#pragma GCC unroll 8
    for (; m < R - 1; ++m) feed(m, false);  // the newest rows: only the last outputs
    for (; m < kh; ++m) feed(m, true);
#pragma GCC unroll 8
    for (; m < kh + R - 1; ++m) feed(m, false);  // the oldest rows: only the first outputs
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < v_count; ++v) Put{}(out + (R - 1 - r) * out_stride + t + L * v, a[r][v]);
  };
  auto scalar = [&](long long t) __attribute__((always_inline)) {
    for (int j = 0; j < R; ++j) {
      float acc = 0;
      for (int i = 0; i < kh; ++i) acc = madd<L>(acc, k[i], rows[R - 1 - j + i][t]);
      if constexpr (std::is_same_v<T, float>) out[j * out_stride + t] = acc;
      else out[j * out_stride + t] = saturate_round<T>(acc);
    }
  };
  over_blocks<V, L>(n, block, scalar);
}

// column_block = 8 output rows: on AVX-512 in one loop of 8 rows x 32 columns (16 accumulators:
// each ring row loaded once feeds 8 sums, half the L2 reads per FMA of 4 rows x 64 columns; a
// ring larger than L1 made the column pass L2-bound: 0.39 ns an output at kh = 31 on the Zen 5
// VM, 0.28 with the ring in L1); elsewhere as two loops of 4 rows (newest first: the last four
// output rows read rows[0..], the first four rows[4..])
template <int KH, int L, typename T>
inline __attribute__((always_inline)) void column_any_width(const float* const* rows, const float* k, int kh,
                                                            long long n, T* out, long long out_stride) {
  static_assert(column_block == 8, "the loops below split 8 rows");
  if (wide_vectors() == 8) {
    column_loop<KH, 2, 8, L>(rows, k, kh, n, out, out_stride);
  } else {
    column_loop<KH, 1, 4, L>(rows, k, kh, n, out + 4 * out_stride, out_stride);
    column_loop<KH, 1, 4, L>(rows + 4, k, kh, n, out, out_stride);
  }
}

#if defined(GPUCONV_COLUMN_AVX512)
// put() for uint8/uint16 in three AVX-512 instructions where GCC's vector code takes eight
// (two compares and blends for the clamps, the 1.5 * 2^23 rounding, a truncating convert):
// vmaxps (NaN and negatives to 0, as put's first clamp), vcvtps2dq (round half to even, the
// default rounding mode: put's rounding for values in range), vpmovusdb/vpmovusdw with the
// store (unsigned saturation; a value past 2^31 converts to 0x80000000, which saturates to the
// top as put's second clamp does). Not always_inline: it is inlined where it is called, in
// column_rows_avx512 below (flatten), whose target allows it.
struct put_avx512 {
  // the zero-masked forms with every lane set are the plain instructions, without the
  // undefined vector (as load_wide below)
  [[gnu::target("arch=x86-64-v4")]] static __m512i rounded(v16 v) {
    const __mmask16 all = 0xffff;
    return _mm512_maskz_cvtps_epi32(all, _mm512_maskz_max_ps(all, __m512(v), _mm512_setzero_ps()));
  }
  [[gnu::target("arch=x86-64-v4")]] void operator()(std::uint8_t* p, v16 v) const {
    const __m512i q = rounded(v);
    _mm512_mask_cvtusepi32_storeu_epi8(p, __mmask16(0xffff), q);
  }
  [[gnu::target("arch=x86-64-v4")]] void operator()(std::uint16_t* p, v16 v) const {
    const __m512i q = rounded(v);
    _mm512_mask_cvtusepi32_storeu_epi16(p, __mmask16(0xffff), q);
  }
};

// column_rows's full blocks of 8 rows for narrow outputs on AVX-512: column_any_width's loop
// (the same sums, in the same order) with put_avx512's stores. At kh = 31 the stores were
// 128 of ~700 instructions per 8 x 32 outputs, half of them on Intel's port 5 (the compares
// into mask registers), which the FMAs share.
template <typename T>
[[gnu::target("arch=x86-64-v4"), gnu::flatten]] void column_rows_avx512(const float* const* rows, const float* k,
                                                                        int kh, long long n, T* out,
                                                                        long long out_stride) {
  switch (kh) {
    case 2: return column_loop<2, 2, 8, 16, T, put_avx512>(rows, k, kh, n, out, out_stride);
    case 3: return column_loop<3, 2, 8, 16, T, put_avx512>(rows, k, kh, n, out, out_stride);
    case 4: return column_loop<4, 2, 8, 16, T, put_avx512>(rows, k, kh, n, out, out_stride);
    case 5: return column_loop<5, 2, 8, 16, T, put_avx512>(rows, k, kh, n, out, out_stride);
    case 6: return column_loop<6, 2, 8, 16, T, put_avx512>(rows, k, kh, n, out, out_stride);
    case 7: return column_loop<7, 2, 8, 16, T, put_avx512>(rows, k, kh, n, out, out_stride);
    case 8: return column_loop<8, 2, 8, 16, T, put_avx512>(rows, k, kh, n, out, out_stride);
    case 9: return column_loop<9, 2, 8, 16, T, put_avx512>(rows, k, kh, n, out, out_stride);
    default: return column_loop<0, 2, 8, 16, T, put_avx512>(rows, k, kh, n, out, out_stride);
  }
}
#endif

// column_rows: column_block rows at once with the counts up to 9 fixed as in taps_any; fewer
// rows (a band's last) four at a time, then one at a time through taps_any.
template <int L, typename T>
inline __attribute__((always_inline)) void columns_any(const float* const* rows, const float* k, int kh, int count,
                                                       long long n, T* out, long long out_stride) {
  if (count != column_block) {
    // a band's last rows: four at a time (output rows j0 .. j0 + 3 read rows[count - 4 - j0 ..]),
    // then one at a time
    int j = 0;
    for (; j + 4 <= count; j += 4) {
      if (wide_vectors() == 8)
        column_loop<0, 4, 4, L>(rows + count - 4 - j, k, kh, n, out + j * out_stride, out_stride);
      else
        column_loop<0, 1, 4, L>(rows + count - 4 - j, k, kh, n, out + j * out_stride, out_stride);
    }
    for (; j < count; ++j) taps_any<L>(rows + count - 1 - j, k, kh, 1, n, out + j * out_stride);
    return;
  }
#if defined(GPUCONV_COLUMN_AVX512)
  if constexpr (!std::is_same_v<T, float>)
    if (wide_vectors() == 8) return column_rows_avx512(rows, k, kh, n, out, out_stride);
#endif
  switch (kh) {
    case 2: return column_any_width<2, L>(rows, k, kh, n, out, out_stride);
    case 3: return column_any_width<3, L>(rows, k, kh, n, out, out_stride);
    case 4: return column_any_width<4, L>(rows, k, kh, n, out, out_stride);
    case 5: return column_any_width<5, L>(rows, k, kh, n, out, out_stride);
    case 6: return column_any_width<6, L>(rows, k, kh, n, out, out_stride);
    case 7: return column_any_width<7, L>(rows, k, kh, n, out, out_stride);
    case 8: return column_any_width<8, L>(rows, k, kh, n, out, out_stride);
    case 9: return column_any_width<9, L>(rows, k, kh, n, out, out_stride);
    default: return column_any_width<0, L>(rows, k, kh, n, out, out_stride);
  }
}

}  // namespace

GPUCONV_PER_ISA(taps_rows, (const float* const* rows, const float* k, int kh, int kw, long long n, float* out),
                (rows, k, kh, kw, n, out), { taps_any<L>(rows, k, kh, kw, n, out); })
GPUCONV_PER_ISA(taps_rows, (const float* const* rows, const float* k, int kh, int kw, long long n, std::uint8_t* out),
                (rows, k, kh, kw, n, out), { taps_any<L>(rows, k, kh, kw, n, out); })
GPUCONV_PER_ISA(taps_rows, (const float* const* rows, const float* k, int kh, int kw, long long n, std::uint16_t* out),
                (rows, k, kh, kw, n, out), { taps_any<L>(rows, k, kh, kw, n, out); })

GPUCONV_PER_ISA(column_rows,
                (const float* const* rows, const float* k, int kh, int count, long long n, float* out,
                 long long out_stride),
                (rows, k, kh, count, n, out, out_stride), { columns_any<L>(rows, k, kh, count, n, out, out_stride); })
GPUCONV_PER_ISA(column_rows,
                (const float* const* rows, const float* k, int kh, int count, long long n, std::uint8_t* out,
                 long long out_stride),
                (rows, k, kh, count, n, out, out_stride), { columns_any<L>(rows, k, kh, count, n, out, out_stride); })
GPUCONV_PER_ISA(column_rows,
                (const float* const* rows, const float* k, int kh, int count, long long n, std::uint16_t* out,
                 long long out_stride),
                (rows, k, kh, count, n, out, out_stride), { columns_any<L>(rows, k, kh, count, n, out, out_stride); })

namespace {

#if defined(__x86_64__)
#define GPUCONV_AVX512 [[gnu::target("arch=x86-64-v4"), gnu::always_inline]] inline

// 16 pixels from p as floats (exact for uint8/uint16)
template <typename T>
GPUCONV_AVX512 __m512 load_wide(const T* p) {
  // the intrinsics, not __builtin_convertvector: in some contexts (row_taps16's unrolled loads)
  // GCC 12 assembled the vector from 16 scalar loads and inserts. Their zero-masked forms with
  // every lane set are the plain instructions, without the undefined vector (as window below).
  const __mmask16 all = 0xffff;
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_loadu_ps(p);
  } else if constexpr (sizeof(T) == 1) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm512_maskz_cvtepi32_ps(all, _mm512_maskz_cvtepu8_epi32(all, bytes));
  } else {
    const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_maskz_cvtepi32_ps(all, _mm512_maskz_cvtepu16_epi32(all, words));
  }
}

// the 16 values that start R values into lo, running on into hi (valignd)
template <int R>
GPUCONV_AVX512 __m512 window(__m512 lo, __m512 hi) {
  // the masked form with every lane set: plain valignd, without the undefined vector that
  // _mm512_alignr_epi32 passes (GCC 12 warns that it may be used uninitialized)
  const __m512i h = _mm512_castps_si512(hi);
  return _mm512_castsi512_ps(_mm512_mask_alignr_epi32(h, __mmask16(0xffff), h, _mm512_castps_si512(lo), R));
}

// tap s of a group (below: row_block): a[v] += c * (the window 16 - s into d[v], d[v + 1])
template <int S, int V>
GPUCONV_AVX512 void group_tap(const float* kg, int taps, const __m512* d, __m512* a) {
  if (S > 0 && S >= taps) return;
  const __m512 c = _mm512_set1_ps(kg[S]);
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    if constexpr (S == 0) a[v] = _mm512_fmadd_ps(c, d[v + 1], a[v]);
    else a[v] = _mm512_fmadd_ps(c, window<16 - S>(d[v], d[v + 1]), a[v]);
  }
}

template <int V, int... S>
GPUCONV_AVX512 void group_taps(std::integer_sequence<int, S...>, const float* kg, int taps, const __m512* d,
                               __m512* a) {
  (group_tap<S, V>(kg, taps, d, a), ...);
}

// 16 V row-pass outputs from t. Blocks D[m] = src + t + kw - 1 + 16 m; tap j = 16 g + s reads
// the window at src + t + kw - 1 + 16 v - j, which is D[v - g] for s = 0, else the window
// 16 - s into D[v - g - 1]: per group g of 16 taps, V + 1 loads feed 16 V FMAs, and each
// accumulator takes its taps in taps_loop's order (j ascending), so the sums are its to the
// bit. The lowest block read, D[-1 - (kw - 1) / 16], starts at t + (kw - 1) % 16 - 16 >= -16.
template <int V, typename T>
GPUCONV_AVX512 void row_block(const T* src, const float* k, int kw, long long t, float* out) {
  const T* e = src + t + kw - 1;
  // the source lines two blocks on: a block's ~250 uops per group of taps keep the next
  // block's loads out of the reorder window, and a row read in place from the image (a few
  // KB, then the next row 16 KB on) is too short a stream for the hardware prefetcher
  constexpr int per_line = 64 / int(sizeof(T));
#pragma GCC unroll 8
  for (int m = 0; m < 16 * V; m += per_line) _mm_prefetch((const char*)(e + 32 * V + m), _MM_HINT_T0);
  __m512 a[V];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) a[v] = _mm512_setzero_ps();
  for (int g = 0; 16 * g < kw; ++g) {
    __m512 d[V + 1];  // d[m] = D[m - g - 1]
#pragma GCC unroll 9
    for (int m = 0; m <= V; ++m) d[m] = load_wide(e + 16 * (m - g - 1));
    group_taps<V>(std::make_integer_sequence<int, 16>{}, k + 16 * g, std::min(16, kw - 16 * g), d, a);
  }
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) _mm512_storeu_ps(out + t + 16 * v, a[v]);
}

// row_taps on AVX-512: blocks of 128 outputs, of 16 below 128, the last moved back to end at
// n as in over_blocks; n < 16 (no block fits) is left to the caller
template <typename T>
[[gnu::target("arch=x86-64-v4")]] void row_taps_avx512(const T* src, const float* k, int kw, long long n,
                                                        float* out) {
  if (n >= 128) {
    long long t = 0;
    for (; t + 128 <= n; t += 128) row_block<8>(src, k, kw, t, out);
    if (t < n) row_block<8>(src, k, kw, n - 128, out);
  } else {
    long long t = 0;
    for (; t + 16 <= n; t += 16) row_block<1>(src, k, kw, t, out);
    if (t < n) row_block<1>(src, k, kw, n - 16, out);
  }
}

// 16 x 16 transpose in registers: r[i] (lanes = columns) becomes r[j] (lanes = rows); four
// stages of 16 shuffles (pairs of rows, pairs of pairs, then 128-bit lanes twice). The masked
// forms with every lane set are the plain instructions, without the undefined vector the
// unmasked intrinsics pass (GCC 12 warns that it may be used uninitialized; as window above).
GPUCONV_AVX512 __m512 unpack_lo(__m512 a, __m512 b) { return _mm512_mask_unpacklo_ps(a, __mmask16(0xffff), a, b); }
GPUCONV_AVX512 __m512 unpack_hi(__m512 a, __m512 b) { return _mm512_mask_unpackhi_ps(a, __mmask16(0xffff), a, b); }
GPUCONV_AVX512 __m512 unpack_lo_pairs(__m512 a, __m512 b) {
  const __m512d x = _mm512_castps_pd(a);
  return _mm512_castpd_ps(_mm512_mask_unpacklo_pd(x, __mmask8(0xff), x, _mm512_castps_pd(b)));
}
GPUCONV_AVX512 __m512 unpack_hi_pairs(__m512 a, __m512 b) {
  const __m512d x = _mm512_castps_pd(a);
  return _mm512_castpd_ps(_mm512_mask_unpackhi_pd(x, __mmask8(0xff), x, _mm512_castps_pd(b)));
}
// 128-bit lanes 0 and 2 (S = 0x88) or 1 and 3 (S = 0xdd) of a, then the same of b
template <int S>
GPUCONV_AVX512 __m512 lanes(__m512 a, __m512 b) { return _mm512_mask_shuffle_f32x4(a, __mmask16(0xffff), a, b, S); }

GPUCONV_AVX512 void transpose16(__m512* r) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = unpack_lo(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = unpack_hi(r[2 * i], r[2 * i + 1]);
  }
  // u[4 g + c]: columns c + 4 l in 128-bit lane l, rows 4 g .. 4 g + 3
  __m512 u[16];
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    u[4 * g] = unpack_lo_pairs(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = unpack_hi_pairs(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = unpack_lo_pairs(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = unpack_hi_pairs(t[4 * g + 1], t[4 * g + 3]);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512 v = lanes<0x88>(u[c], u[4 + c]), w = lanes<0xdd>(u[c], u[4 + c]),
                 v2 = lanes<0x88>(u[8 + c], u[12 + c]), w2 = lanes<0xdd>(u[8 + c], u[12 + c]);
    r[c] = lanes<0x88>(v, v2);
    r[c + 8] = lanes<0xdd>(v, v2);
    r[c + 4] = lanes<0x88>(w, w2);
    r[c + 12] = lanes<0xdd>(w, w2);
  }
}

// row_taps16 on AVX-512: chunks of up to 512 outputs (the chunk's columns of the 16 rows,
// transposed, stay in L1: (512 + kw + 15) x 64 bytes); blocks of 16 outputs, the last of a
// chunk and the last chunk moved back to end at n (outputs computed twice, to the same values).
// Block sums: a[u] (output t + u of every row) takes tap j from column t + u + kw - 1 - j, j
// ascending with one FMA each, as row_block and taps_loop do.
template <typename T>
[[gnu::target("arch=x86-64-v4")]] void row_taps16_avx512(const T* const* src, const float* k, int kw, long long n,
                                                          float* const* out) {
  constexpr long long chunk = 512;
  // columns[x]: the 16 rows' values at column x (a cache line each)
  thread_local line_vector<float> buffer;
  buffer.resize(std::size_t(16 * (chunk + kw + 15)));
  float* const columns = buffer.data();
  for (long long c0 = 0; c0 < n; c0 += chunk) {
    const long long t0 = std::min(c0, n - std::min(chunk, n)), m = std::min(chunk, n - t0);
    const long long width = m + kw - 1;  // source columns t0 .. t0 + width - 1
    for (long long x = 0; x < width; x += 16) {
      const long long xs = std::min(x, width - 16);
      __m512 r[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) r[i] = load_wide(src[i] + t0 + xs);
      transpose16(r);
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) _mm512_store_ps(columns + 16 * (xs + i), r[i]);
    }
    for (long long u0 = 0; u0 < m; u0 += 16) {
      const long long us = std::min(u0, m - 16);
      __m512 a[16];
#pragma GCC unroll 16
      for (int u = 0; u < 16; ++u) a[u] = _mm512_setzero_ps();
      for (int j = 0; j < kw; ++j) {
        const __m512 c = _mm512_set1_ps(k[j]);
        const float* col = columns + 16 * (us + kw - 1 - j);
        // hide that tap j + 1 reads tap j's columns one on: GCC would otherwise carry the loaded
        // columns across taps in registers (predictive commoning), with a move for each and
        // spills, instead of one FMA with a memory operand per column
        asm("" : "+r"(col));
#pragma GCC unroll 16
        for (int u = 0; u < 16; ++u) a[u] = _mm512_fmadd_ps(c, _mm512_load_ps(col + 16 * u), a[u]);
      }
      transpose16(a);
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) _mm512_storeu_ps(out[i] + t0 + us, a[i]);
    }
  }
}
#endif

template <typename T>
void row_taps16_any(const T* const* src, const float* k, int kw, long long n, float* const* out) {
#if defined(__x86_64__)
  if (n >= 16 && wide_vectors() == 8) return row_taps16_avx512(src, k, kw, n, out);
#endif
  (void)src, (void)k, (void)kw, (void)n, (void)out;  // outside its precondition: nothing
}

// row_taps: AVX-512's loop where it runs (n >= 16), else taps_rows on the widened row
template <typename T>
inline __attribute__((always_inline)) void row_taps_any(const T* src, const float* k, int kw, long long n,
                                                        float* out) {
#if defined(__x86_64__)
  if (n >= 16 && wide_vectors() == 8) return row_taps_avx512(src, k, kw, n, out);
#endif
  const float* row = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    row = src;
  } else {
    thread_local std::vector<float> wide;
    wide.resize(std::size_t(n + kw - 1));
    for (long long t = 0; t < n + kw - 1; ++t) wide[std::size_t(t)] = float(src[t]);
    row = wide.data();
  }
  // the exported function, not taps_any inlined here: GCC may compile the scalar loop (n < 16)
  // differently in another context (an in-order vectorised sum without the FMA), which
  // changes the last bit
  taps_rows(&row, k, 1, kw, n, out);
}

}  // namespace

GPUCONV_PER_ISA(row_taps, (const float* src, const float* k, int kw, long long n, float* out),
                (src, k, kw, n, out), { row_taps_any(src, k, kw, n, out); })
GPUCONV_PER_ISA(row_taps, (const std::uint8_t* src, const float* k, int kw, long long n, float* out),
                (src, k, kw, n, out), { row_taps_any(src, k, kw, n, out); })
GPUCONV_PER_ISA(row_taps, (const std::uint16_t* src, const float* k, int kw, long long n, float* out),
                (src, k, kw, n, out), { row_taps_any(src, k, kw, n, out); })

bool row_group_available() { return wide_vectors() == 8; }

void row_taps16(const float* const* src, const float* k, int kw, long long n, float* const* out) {
  row_taps16_any(src, k, kw, n, out);
}
void row_taps16(const std::uint8_t* const* src, const float* k, int kw, long long n, float* const* out) {
  row_taps16_any(src, k, kw, n, out);
}
void row_taps16(const std::uint16_t* const* src, const float* k, int kw, long long n, float* const* out) {
  row_taps16_any(src, k, kw, n, out);
}

namespace {

// round half to even and saturate to [0, hi] (NaN -> 0) in a form the vectoriser takes:
// clamp first (v > 0 is false for NaN), then add and subtract 1.5 * 2^23, which rounds a
// float in [0, 2^22] to an integer in the default rounding mode, ties to even.
template <typename T>
inline __attribute__((always_inline)) void narrow_loop(const float* in, long long n, T* out) {
  constexpr float hi = sizeof(T) == 1 ? 255.f : 65535.f, magic = 12582912.f;
  for (long long t = 0; t < n; ++t) {
    float v = in[t] > 0.f ? in[t] : 0.f;
    v = v < hi ? v : hi;
    out[t] = T(int((v + magic) - magic));
  }
}

}  // namespace

GPUCONV_PER_ISA(widen_row, (const std::uint8_t* in, long long n, float* out),
                (in, n, out), { for (long long t = 0; t < n; ++t) out[t] = float(in[t]); })
GPUCONV_PER_ISA(widen_row, (const std::uint16_t* in, long long n, float* out),
                (in, n, out), { for (long long t = 0; t < n; ++t) out[t] = float(in[t]); })
GPUCONV_PER_ISA(widen_row, (const std::uint8_t* in, long long n, std::int16_t* out),
                (in, n, out), { for (long long t = 0; t < n; ++t) out[t] = std::int16_t(in[t]); })
GPUCONV_PER_ISA(narrow_row, (const float* in, long long n, std::uint8_t* out),
                (in, n, out), { narrow_loop(in, n, out); })
GPUCONV_PER_ISA(narrow_row, (const float* in, long long n, std::uint16_t* out),
                (in, n, out), { narrow_loop(in, n, out); })

}  // namespace gpuconv::conv
