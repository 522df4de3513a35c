// Warp layer: data exchange among the lanes that share a row, through shuffles.
#pragma once
#include "../thread/array.hpp"
#include "../thread/complex.hpp"
#include "../thread/static_for.hpp"

namespace gpuconv::fft {

__device__ GPUCONV_INLINE complex_t<float> shfl(complex_t<float> v, int src_lane) {
  return {__shfl_sync(0xffffffffu, v.re, src_lane), __shfl_sync(0xffffffffu, v.im, src_lane)};
}

// Rows of N complex values spread over groups of T lanes (T | 32), lane t of a group holding
// v[m] = Z[t + T*m]. Returns, for each m, Z[(N - (t + T*m)) mod N]: the mirror partner that
// the real-FFT post-processing pairs with Z[k]. For t != 0 it lives in lane T - t at index
// P-1-m; lane 0 holds its own partners at index (P - m) mod P.
template <int T, int P>
__device__ GPUCONV_INLINE array_t<complex_t<float>, P> mirror_partners(const array_t<complex_t<float>, P>& v,
                                                                        int t) {
  static_assert(T >= 2 && T <= 32 && (32 % T) == 0, "mirror_partners: T must divide 32");
  const int lane = threadIdx.x & 31;
  const int src = (lane & ~(T - 1)) | ((T - t) & (T - 1));
  array_t<complex_t<float>, P> out;
  static_for<P>([&](auto m) {
    constexpr int mm = decltype(m)::value;
    complex_t<float> p = shfl(v[P - 1 - mm], src);
    out[mm] = (t == 0) ? v[(P - mm) % P] : p;
  });
  return out;
}

}  // namespace gpuconv::fft
