// Warp layer: coalesced global access for rows owned one per lane.
//
// When each lane of a warp owns a whole row, lane-strided global accesses touch a sector per
// lane per instruction. These helpers move the warp's 32 consecutive rows, which are one
// contiguous span of global memory, through a per-warp shared buffer with 16-byte
// accesses instead.
//
// Complex rows of odd length L (n/2+1 values): the shared buffer is an exact image of the
// global span. Lane i touches element i*L + k; L is odd, so the lanes of a half-warp hit 16
// distinct 8-byte bank pairs: conflict-free without padding.
#pragma once
#include "../device/memory.cuh"
#include "../thread/array.hpp"
#include "../thread/static_for.hpp"

namespace gpuconv::fft {

// Copies `count` complex values between global and shared memory, 16 bytes at a time when
// both ends allow it. All 32 lanes call it.
template <bool to_shared>
__device__ GPUCONV_INLINE void warp_copy_complex(complex_t<float>* shared, complex_t<float>* global_ptr,
                                                 int count) {
  const int lane = threadIdx.x & 31;
  if ((count & 1) == 0 && aligned16(global_ptr)) {
    float4* g = reinterpret_cast<float4*>(global_ptr);
    float4* s = reinterpret_cast<float4*>(shared);
    for (int i = lane; i < count / 2; i += 32) {
      if constexpr (to_shared) s[i] = __ldg(g + i); else g[i] = s[i];
    }
  } else {
    for (int i = lane; i < count; i += 32) {
      if constexpr (to_shared) shared[i] = global_ptr[i]; else global_ptr[i] = shared[i];
    }
  }
}

// Lane-owned rows of L complex values -> global, coalesced. `rows` of the warp's 32 are valid.
template <int L>
__device__ GPUCONV_INLINE void warp_store_complex_rows(const array_t<complex_t<float>, L>& row,
                                                       complex_t<float>* warp_shared,
                                                       complex_t<float>* global_ptr, int rows) {
  const int lane = threadIdx.x & 31;
  static_for<L>([&](auto k) { warp_shared[lane * L + k.value] = row[k.value]; });
  __syncwarp();
  warp_copy_complex<false>(warp_shared, global_ptr, rows * L);
}

// Global -> lane-owned rows of L complex values, coalesced.
template <int L>
__device__ GPUCONV_INLINE array_t<complex_t<float>, L> warp_load_complex_rows(complex_t<float>* warp_shared,
                                                                              const complex_t<float>* global_ptr,
                                                                              int rows) {
  const int lane = threadIdx.x & 31;
  warp_copy_complex<true>(warp_shared, const_cast<complex_t<float>*>(global_ptr), rows * L);
  __syncwarp();
  array_t<complex_t<float>, L> row;
  static_for<L>([&](auto k) { row[k.value] = warp_shared[lane * L + k.value]; });
  return row;
}

// Lane-owned rows of n reals (n a multiple of 4) -> global, coalesced. Rows are kept at a
// stride of n/4 + 1 float4 in shared memory (odd for n >= 8), so the per-lane writes of a
// quarter-warp land on 8 distinct 16-byte bank groups.
template <int n>
__device__ GPUCONV_INLINE void warp_store_real_rows(const array_t<float, n>& row, float4* warp_shared,
                                                    float* global_ptr, int rows) {
  static_assert(n % 4 == 0, "warp_store_real_rows: n must be a multiple of 4");
  constexpr int q = n / 4;
  constexpr int stride = q == 1 ? 1 : q + 1;
  const int lane = threadIdx.x & 31;
  static_for<q>([&](auto i) {
    constexpr int ii = decltype(i)::value;
    warp_shared[lane * stride + ii] = make_float4(row[4 * ii], row[4 * ii + 1], row[4 * ii + 2], row[4 * ii + 3]);
  });
  __syncwarp();
  const int count = rows * q;
  if (aligned16(global_ptr)) {
    float4* g = reinterpret_cast<float4*>(global_ptr);
    for (int p = lane; p < count; p += 32) g[p] = warp_shared[(p / q) * stride + p % q];
  } else {
    for (int p = lane; p < count; p += 32) {
      float4 v = warp_shared[(p / q) * stride + p % q];
      global_ptr[4 * p] = v.x; global_ptr[4 * p + 1] = v.y; global_ptr[4 * p + 2] = v.z; global_ptr[4 * p + 3] = v.w;
    }
  }
}

// Rows of N+1 complex spread over groups of T lanes (2 <= T <= 16): lane t of a group holds
// X[t + T*m] for m < P (N = T*P) and lane 0 also X[N]. The warp's 32/T rows are one
// contiguous span of global memory; they go through shared memory at a row stride of N + T
// complex (== T mod 16, so a half-warp's writes hit distinct bank pairs), then out with
// coalesced 8-byte stores. warp_shared holds (32/T) * (N + T) values.
template <int T, int P>
__device__ GPUCONV_INLINE void warp_store_striped_complex_rows(const array_t<complex_t<float>, P>& v,
                                                               complex_t<float> last, complex_t<float>* warp_shared,
                                                               complex_t<float>* global_ptr, int rows) {
  static_assert(T >= 2 && T <= 16, "warp_store_striped_complex_rows: 2 <= T <= 16");
  constexpr int N = T * P, L = N + 1, stride = N + T;
  const int lane = threadIdx.x & 31, q = lane / T, t = lane % T;
  static_for<P>([&](auto m) { warp_shared[q * stride + t + T * m.value] = v[m.value]; });
  if (t == 0) warp_shared[q * stride + N] = last;
  __syncwarp();
  for (int p = lane; p < rows * L; p += 32) {
    const int row = p / L;
    global_ptr[p] = warp_shared[row * stride + (p - row * L)];
  }
}

// Global -> lane-owned rows of n reals, coalesced: the mirror of warp_store_real_rows, with
// the same padded layout.
template <int n>
__device__ GPUCONV_INLINE array_t<float, n> warp_load_real_rows(float4* warp_shared, const float* global_ptr,
                                                                int rows) {
  static_assert(n % 4 == 0, "warp_load_real_rows: n must be a multiple of 4");
  constexpr int q = n / 4;
  constexpr int stride = q == 1 ? 1 : q + 1;
  const int lane = threadIdx.x & 31;
  const float4* g = reinterpret_cast<const float4*>(global_ptr);  // the plan guarantees 16-byte alignment
  for (int p = lane; p < rows * q; p += 32) warp_shared[(p / q) * stride + p % q] = __ldg(g + p);
  __syncwarp();
  array_t<float, n> row;
  static_for<q>([&](auto i) {
    constexpr int ii = decltype(i)::value;
    const float4 v = warp_shared[lane * stride + ii];
    row[4 * ii] = v.x; row[4 * ii + 1] = v.y; row[4 * ii + 2] = v.z; row[4 * ii + 3] = v.w;
  });
  return row;
}

// Rows of L complex values (a warp's `rows` consecutive rows, one contiguous span of global
// memory from global_ptr) copied into shared memory at a row stride of S complex, without
// waiting: cp.async (sm_80 and later), 16 bytes at a time where L is even and the span starts on
// 16 bytes (R2C input rows), else 8 (C2R input rows of N + 1 values). The copies land once the
// copying lanes have run warp_stage_wait(); before sm_80 the copies are plain loads and stores.
// All 32 lanes call both.
template <int L, int S>
__device__ GPUCONV_INLINE void warp_stage_rows_async(complex_t<float>* warp_shared, const complex_t<float>* global_ptr,
                                                     int rows) {
  static_assert(S >= L && S % 2 == 0, "warp_stage_rows_async: the stride must hold a row and keep 16-byte chunks aligned");
  const int lane = threadIdx.x & 31;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(warp_shared));
  if (L % 2 == 0 && aligned16(global_ptr)) {
    constexpr int H = L / 2;  // 16-byte chunks a row
    for (int c = lane; c < rows * H; c += 32) {
      const int r = c / H, k = c - r * H;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(base + unsigned(r * S + 2 * k) * 8u),
                   "l"(global_ptr + 2 * c)
                   : "memory");
    }
  } else {
    for (int c = lane; c < rows * L; c += 32) {
      const int r = c / L, k = c - r * L;
      asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(base + unsigned(r * S + k) * 8u),
                   "l"(global_ptr + c)
                   : "memory");
    }
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
  for (int c = lane; c < rows * L; c += 32) {
    const int r = c / L;
    warp_shared[r * S + (c - r * L)] = global_ptr[c];
  }
#endif
}

// Waits for this lane's staged copies, then for the warp's: every lane may read the rows.
__device__ GPUCONV_INLINE void warp_stage_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
  __syncwarp();
}

}  // namespace gpuconv::fft
