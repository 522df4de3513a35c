// taps_rows, widen_row and narrow_row, built once per ISA (AVX-512, AVX2+FMA, baseline x86-64) and dispatched at load
// time through the ifunc GCC makes for target_clones: one portable binary.
#include "cpu_rows.hpp"

// The helpers below are always inlined into each clone; GCC's note that a 64-byte vector
// argument's ABI differs without AVX-512 is about calls that never happen.
#pragma GCC diagnostic ignored "-Wpsabi"

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define GPUCONV_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GPUCONV_CLONES
#endif

namespace gpuconv::conv {

namespace {

// 16 floats; GCC lowers it to one AVX-512, two AVX2 or four SSE registers per clone.
typedef float v16 __attribute__((vector_size(64)));
typedef float v16_unaligned __attribute__((vector_size(64), aligned(4)));

inline __attribute__((always_inline)) v16 load(const float* p) { return *reinterpret_cast<const v16_unaligned*>(p); }
inline __attribute__((always_inline)) void store(float* p, v16 v) { *reinterpret_cast<v16_unaligned*>(p) = v; }

}  // namespace

namespace {

typedef int v16i __attribute__((vector_size(64)));
typedef std::uint8_t v16u8 __attribute__((vector_size(16)));
typedef std::uint16_t v16u16 __attribute__((vector_size(32)));
typedef std::uint8_t v16u8_unaligned __attribute__((vector_size(16), aligned(1)));
typedef std::uint16_t v16u16_unaligned __attribute__((vector_size(32), aligned(2)));

// 16 outputs to memory: float as is; uint8/uint16 rounded half to even and saturated as in
// narrow_loop below (clamp first, NaN to 0, then the 1.5 * 2^23 rounding).
template <typename T>
inline __attribute__((always_inline)) void put(T* p, v16 v) {
  if constexpr (std::is_same_v<T, float>) {
    store(p, v);
  } else {
    constexpr float hi = sizeof(T) == 1 ? 255.f : 65535.f, magic = 12582912.f;
    const v16 zero = {}, top = zero + hi;
    v = v > zero ? v : zero;
    v = v < top ? v : top;
    const v16i q = __builtin_convertvector((v + magic) - magic, v16i);
    if constexpr (sizeof(T) == 1) *reinterpret_cast<v16u8_unaligned*>(p) = __builtin_convertvector(q, v16u8);
    else *reinterpret_cast<v16u16_unaligned*>(p) = __builtin_convertvector(q, v16u16);
  }
}

// taps_rows's sums for kh x kw taps fixed at compile time (KH, KW > 0) or given at run time
// (KH = KW = 0): fixed counts unroll the tap loops, so that the taps stay in registers or
// become broadcast operands instead of a load and a branch per tap and block.
template <int KH, int KW, typename T>
inline __attribute__((always_inline)) void taps_loop(const float* const* rows, const float* k, int kh_, int kw_,
                                                     long long n, T* out) {
  const int kh = KH ? KH : kh_, kw = KW ? KW : kw_;
  constexpr int block = 64;  // outputs held in four vectors across all taps
  long long t = 0;
  for (; t + block <= n; t += block) {
    v16 a0 = {}, a1 = {}, a2 = {}, a3 = {};
    for (int i = 0; i < kh; ++i) {
      const float* r = rows[i] + t + kw - 1;
      const float* ki = k + (long long)i * kw;
      for (int j = 0; j < kw; ++j) {
        const float c = ki[j];
        const float* s = r - j;
        a0 += c * load(s);
        a1 += c * load(s + 16);
        a2 += c * load(s + 32);
        a3 += c * load(s + 48);
      }
    }
    put(out + t, a0);
    put(out + t + 16, a1);
    put(out + t + 32, a2);
    put(out + t + 48, a3);
  }
  for (; t < n; ++t) {
    float acc = 0;
    for (int i = 0; i < kh; ++i)
      for (int j = 0; j < kw; ++j) acc += k[(long long)i * kw + j] * rows[i][t + kw - 1 - j];
    if constexpr (std::is_same_v<T, float>) out[t] = acc;
    else out[t] = saturate_round<T>(acc);
  }
}

template <int KH, int KW, typename T>
inline __attribute__((always_inline)) bool taps_if(const float* const* rows, const float* k, int kh, int kw,
                                                   long long n, T* out) {
  if (kh != KH || kw != KW) return false;
  taps_loop<KH, KW>(rows, k, kh, kw, n, out);
  return true;
}

// The separable method's passes (one row of 1 x kw taps, kh x 1 taps over kh rows) and the
// direct method's 3 x 3 and 5 x 5 with fixed counts up to 9 taps; the rest at run time.
template <typename T>
inline __attribute__((always_inline)) void taps_any(const float* const* rows, const float* k, int kh, int kw,
                                                    long long n, T* out) {
  if (taps_if<1, 2>(rows, k, kh, kw, n, out) || taps_if<1, 3>(rows, k, kh, kw, n, out) ||
      taps_if<1, 4>(rows, k, kh, kw, n, out) || taps_if<1, 5>(rows, k, kh, kw, n, out) ||
      taps_if<1, 6>(rows, k, kh, kw, n, out) || taps_if<1, 7>(rows, k, kh, kw, n, out) ||
      taps_if<1, 8>(rows, k, kh, kw, n, out) || taps_if<1, 9>(rows, k, kh, kw, n, out) ||
      taps_if<2, 1>(rows, k, kh, kw, n, out) || taps_if<3, 1>(rows, k, kh, kw, n, out) ||
      taps_if<4, 1>(rows, k, kh, kw, n, out) || taps_if<5, 1>(rows, k, kh, kw, n, out) ||
      taps_if<6, 1>(rows, k, kh, kw, n, out) || taps_if<7, 1>(rows, k, kh, kw, n, out) ||
      taps_if<8, 1>(rows, k, kh, kw, n, out) || taps_if<9, 1>(rows, k, kh, kw, n, out) ||
      taps_if<3, 3>(rows, k, kh, kw, n, out) || taps_if<5, 5>(rows, k, kh, kw, n, out))
    return;
  taps_loop<0, 0>(rows, k, kh, kw, n, out);
}

}  // namespace

GPUCONV_CLONES void taps_rows(const float* const* rows, const float* k, int kh, int kw, long long n, float* out) {
  taps_any(rows, k, kh, kw, n, out);
}
GPUCONV_CLONES void taps_rows(const float* const* rows, const float* k, int kh, int kw, long long n,
                              std::uint8_t* out) {
  taps_any(rows, k, kh, kw, n, out);
}
GPUCONV_CLONES void taps_rows(const float* const* rows, const float* k, int kh, int kw, long long n,
                              std::uint16_t* out) {
  taps_any(rows, k, kh, kw, n, out);
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

GPUCONV_CLONES void widen_row(const std::uint8_t* in, long long n, float* out) {
  for (long long t = 0; t < n; ++t) out[t] = float(in[t]);
}
GPUCONV_CLONES void widen_row(const std::uint16_t* in, long long n, float* out) {
  for (long long t = 0; t < n; ++t) out[t] = float(in[t]);
}
GPUCONV_CLONES void narrow_row(const float* in, long long n, std::uint8_t* out) { narrow_loop(in, n, out); }
GPUCONV_CLONES void narrow_row(const float* in, long long n, std::uint16_t* out) { narrow_loop(in, n, out); }

}  // namespace gpuconv::conv
