// Issue 13 item 5, measured before it is built: can the tensor cores take the 32-point line
// transforms of the fused 32-tile kernel at fp32 accuracy faster than its SIMT stages?
//
// Three ways to run batched 32-point complex DFTs (forward, then inverse scaled by 1/32, `reps`
// times in registers; lines read once and written once):
//   simt-block   the fused kernel's stage: fft::block_fft_t<32, 4> (8 values a thread, 4 threads
//                a line, one line a lane, shared-memory passes, twiddles loaded late), 128-thread
//                blocks at the fused kernel's register budget (8 blocks a SM)
//   simt-thread  fft::fft_t<float, 32> a line per thread, all in registers (no exchanges)
//   tc-fp16x3    the DFT as a matrix product on the tensor cores (mma.sync m16n8k16, fp16 in, fp32
//                accumulate): a warp takes 16 lines as the rows of A = [Xr | Xi] and multiplies by
//                the constant [[C, -S], [S, C]] (C = cos, S = sin of 2 pi k n / 32, split hi + lo
//                in fp16, lo scaled by 2^11); each line is scaled by a power of two (its largest
//                magnitude to [2^13, 2^14)) and split hi + lo as well; three products (hi hi,
//                hi lo, lo hi) keep ~22 bits. The output fragments are the next transform's A
//                operand (no shuffles, no shared memory): the chain of a flash-attention kernel.
// Timing: CUDA events, median of 7 after 2 warm-up launches; the marginal cost of a transform
// is (t(reps = 16) - t(reps = 1)) / (15 x 2 x lines). Accuracy: one forward transform against
// a double DFT on the host, relative L2 over 4096 lines.
// A measurement tool, not built by CMake (H100):
//   nvcc -O3 -std=c++20 -arch=sm_90 -I. -o tensor-dft-probe scripts/tensor-dft-probe.cu
//   tensor-dft-probe [log2 lines = 19]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "fft/block/stockham.cuh"
#include "fft/plan/twiddle_table.hpp"

using namespace gpuconv::fft;
using cf = complex_t<float>;

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

constexpr int N = 32;
constexpr double kPi = 3.14159265358979323846;

// ---------------------------------------------------------------- SIMT: the fused kernel's stage
// Global layout of the SIMT kernels: groups of 32 lines, point-major: (line L, point p) at
// ((L / 32) * 32 + p) * 32 + L % 32, so that a warp's 32 lanes load 32 neighbouring lines.
template <int reps, bool forward_only>
__global__ void __launch_bounds__(128, 8) simt_block_kernel(const cf* __restrict__ in, cf* __restrict__ out,
                                                            const cf* __restrict__ table, int groups) {
  constexpr int TL = 4, I = N / TL, stride = N + N / 16 + 1;
  using forward_t = block_fft_t<N, TL, false, twiddle_load_late, true>;
  using inverse_t = block_fft_t<N, TL, true, twiddle_load_late, true>;
  __shared__ cf shared[32 * stride];
  const int line = threadIdx.x % 32, t = threadIdx.x / 32;
  cf* mine = shared + line * stride;
  for (int g = blockIdx.x; g < groups; g += gridDim.x) {
    array_t<cf, I> v;
#pragma unroll
    for (int j = 0; j < I; ++j) v[j] = in[((long long)g * 32 + t + TL * j) * 32 + line];
    if constexpr (forward_only) {
      forward_t::run(v, mine, t, table);
    } else {
#pragma unroll 1
      for (int r = 0; r < reps; ++r) {
        forward_t::run(v, mine, t, table);
#pragma unroll
        for (int j = 0; j < I; ++j) v[j] = v[j] * (1.f / N);
        __syncthreads();
        inverse_t::run(v, mine, t, table);
        __syncthreads();
      }
    }
#pragma unroll
    for (int j = 0; j < I; ++j) out[((long long)g * 32 + t + TL * j) * 32 + line] = v[j];
    __syncthreads();
  }
}

template <int reps, bool forward_only>
__global__ void __launch_bounds__(128) simt_thread_kernel(const cf* __restrict__ in, cf* __restrict__ out, long long lines) {
  for (long long L = blockIdx.x * 128LL + threadIdx.x; L < lines; L += 128LL * gridDim.x) {
    const long long base = (L / 32) * 32 * 32 + L % 32;
    array_t<cf, N> v;
#pragma unroll
    for (int p = 0; p < N; ++p) v[p] = in[base + p * 32];
    if constexpr (forward_only) {
      v = fft_t<float, N, false>{}(v);
    } else {
#pragma unroll 1
      for (int r = 0; r < reps; ++r) {
        v = fft_t<float, N, false>{}(v);
#pragma unroll
        for (int p = 0; p < N; ++p) v[p] = v[p] * (1.f / N);
        v = fft_t<float, N, true>{}(v);
      }
    }
#pragma unroll
    for (int p = 0; p < N; ++p) out[base + p * 32] = v[p];
  }
}

// ---------------------------------------------------------------- tensor cores, fp16 x 3
// Fragments of mma.m16n8k16 (PTX ISA), g = lane / 4, q = lane % 4:
//   A 16 x 16: a0 (g, 2q..2q+1), a1 (g+8, 2q..), a2 (g, 2q+8..), a3 (g+8, 2q+8..)
//   B 16 x 8:  b0 (k = 2q..2q+1, n = g), b1 (k = 2q+8.., n = g)
//   C 16 x 8:  c0 c1 (g, 2q..2q+1), c2 c3 (g+8, 2q..2q+1)
// A line's values live as C fragments of four n-tiles (points 8 nt + 2q + {0,1}, rows g and
// g + 8); two neighbouring n-tiles are one k-chunk of A.
// Global layout of this kernel: line-major, (line L, point p) at L * 32 + p.
struct tc_constants {
  uint2 b[2][2][2][4][32];  // [C or S][hi or lo][k-chunk][n-tile][lane]
};

__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], uint2 b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
}

__device__ __forceinline__ unsigned as_u32(__half2 h) { return *reinterpret_cast<unsigned*>(&h); }

// x * s split in two fp16 pairs: hi = fp16(x s), lo = fp16((x s - hi) 2^11)
__device__ __forceinline__ void split2(float x0, float x1, float s, unsigned& hi, unsigned& lo) {
  const float y0 = x0 * s, y1 = x1 * s;
  const __half2 h = __floats2half2_rn(y0, y1);
  const float2 hf = __half22float2(h);
  hi = as_u32(h);
  lo = as_u32(__floats2half2_rn((y0 - hf.x) * 2048.f, (y1 - hf.y) * 2048.f));
}

// 2^(13 - e) for the largest magnitude m in [2^e, 2^(e+1)): the scaled line stays below 2^14
__device__ __forceinline__ float line_scale(float m) {
  const int e = (int)((__float_as_uint(m) >> 23) & 0xff) - 127;
  const int k = min(max(13 - e, -100), 100);
  return __uint_as_float((unsigned)(127 + k) << 23);
}

struct tc_line_block {
  float re[4][4], im[4][4];  // [n-tile][c fragment element]
};

// One transform of the warp's 16 lines: forward (sign = +1: Y = X F, F = C - i S) or the
// unnormalised inverse (sign = -1), times `post`.
template <int sign>
__device__ __forceinline__ void tc_transform(tc_line_block& x, const uint2 (&b)[2][2][2][4], float post) {
  float m_lo = 0.f, m_hi = 0.f;  // rows g and g + 8
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    m_lo = fmaxf(m_lo, fmaxf(fmaxf(fabsf(x.re[nt][0]), fabsf(x.re[nt][1])), fmaxf(fabsf(x.im[nt][0]), fabsf(x.im[nt][1]))));
    m_hi = fmaxf(m_hi, fmaxf(fmaxf(fabsf(x.re[nt][2]), fabsf(x.re[nt][3])), fmaxf(fabsf(x.im[nt][2]), fabsf(x.im[nt][3]))));
  }
#pragma unroll
  for (int o = 1; o <= 2; o <<= 1) {
    m_lo = fmaxf(m_lo, __shfl_xor_sync(0xffffffffu, m_lo, o));
    m_hi = fmaxf(m_hi, __shfl_xor_sync(0xffffffffu, m_hi, o));
  }
  const float s_lo = line_scale(m_lo), s_hi = line_scale(m_hi);
  // A operands: [k-chunk][reg], hi and lo parts, real and imaginary, and the negated copies
  unsigned rh[2][4], rl[2][4], ih[2][4], il[2][4];
#pragma unroll
  for (int kc = 0; kc < 2; ++kc) {
    split2(x.re[2 * kc][0], x.re[2 * kc][1], s_lo, rh[kc][0], rl[kc][0]);
    split2(x.re[2 * kc][2], x.re[2 * kc][3], s_hi, rh[kc][1], rl[kc][1]);
    split2(x.re[2 * kc + 1][0], x.re[2 * kc + 1][1], s_lo, rh[kc][2], rl[kc][2]);
    split2(x.re[2 * kc + 1][2], x.re[2 * kc + 1][3], s_hi, rh[kc][3], rl[kc][3]);
    split2(x.im[2 * kc][0], x.im[2 * kc][1], s_lo, ih[kc][0], il[kc][0]);
    split2(x.im[2 * kc][2], x.im[2 * kc][3], s_hi, ih[kc][1], il[kc][1]);
    split2(x.im[2 * kc + 1][0], x.im[2 * kc + 1][1], s_lo, ih[kc][2], il[kc][2]);
    split2(x.im[2 * kc + 1][2], x.im[2 * kc + 1][3], s_hi, ih[kc][3], il[kc][3]);
  }
  // forward: out_r = Xr C + Xi S, out_i = Xi C - Xr S; inverse: out_r = Xr C - Xi S, out_i = Xi C + Xr S
  unsigned nh[2][4], nl[2][4];  // the operand that meets S with a minus sign, negated
#pragma unroll
  for (int kc = 0; kc < 2; ++kc)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      nh[kc][r] = (sign > 0 ? rh[kc][r] : ih[kc][r]) ^ 0x80008000u;
      nl[kc][r] = (sign > 0 ? rl[kc][r] : il[kc][r]) ^ 0x80008000u;
    }
  const float scale_lo = post / s_lo, scale_hi = post / s_hi;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    float mr[4] = {0.f, 0.f, 0.f, 0.f}, sr[4] = {0.f, 0.f, 0.f, 0.f};
    float mi[4] = {0.f, 0.f, 0.f, 0.f}, si[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int kc = 0; kc < 2; ++kc) {
      const uint2 ch = b[0][0][kc][nt], cl = b[0][1][kc][nt], sh = b[1][0][kc][nt], sl = b[1][1][kc][nt];
      // real part: Xr C, then (+Xi or -Xi) S
      mma16816(mr, rh[kc], ch), mma16816(sr, rh[kc], cl), mma16816(sr, rl[kc], ch);
      if constexpr (sign > 0) mma16816(mr, ih[kc], sh), mma16816(sr, ih[kc], sl), mma16816(sr, il[kc], sh);
      else mma16816(mr, nh[kc], sh), mma16816(sr, nh[kc], sl), mma16816(sr, nl[kc], sh);
      // imaginary part: Xi C, then (-Xr or +Xr) S
      mma16816(mi, ih[kc], ch), mma16816(si, ih[kc], cl), mma16816(si, il[kc], ch);
      if constexpr (sign > 0) mma16816(mi, nh[kc], sh), mma16816(si, nh[kc], sl), mma16816(si, nl[kc], sh);
      else mma16816(mi, rh[kc], sh), mma16816(si, rh[kc], sl), mma16816(si, rl[kc], sh);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float sc = e < 2 ? scale_lo : scale_hi;
      x.re[nt][e] = fmaf(sr[e], sc * (1.f / 2048.f), mr[e] * sc);
      x.im[nt][e] = fmaf(si[e], sc * (1.f / 2048.f), mi[e] * sc);
    }
  }
}

template <int reps, bool forward_only>
__global__ void __launch_bounds__(128) tc_kernel(const cf* __restrict__ in, cf* __restrict__ out,
                                                 const tc_constants* __restrict__ k, long long blocks16) {
  const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  uint2 b[2][2][2][4];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int kc = 0; kc < 2; ++kc)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) b[m][h][kc][nt] = k->b[m][h][kc][nt][lane];
  const long long warps = (long long)gridDim.x * (blockDim.x / 32);
  for (long long w = blockIdx.x * (blockDim.x / 32LL) + threadIdx.x / 32; w < blocks16; w += warps) {
    const cf* src = in + w * 16 * N;
    tc_line_block x;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float4 v = *reinterpret_cast<const float4*>(src + (g + 8 * half) * N + 8 * nt + 2 * q);
        x.re[nt][2 * half] = v.x, x.im[nt][2 * half] = v.y, x.re[nt][2 * half + 1] = v.z, x.im[nt][2 * half + 1] = v.w;
      }
    if constexpr (forward_only) {
      tc_transform<1>(x, b, 1.f);
    } else {
#pragma unroll 1
      for (int r = 0; r < reps; ++r) {
        tc_transform<1>(x, b, 1.f / N);
        tc_transform<-1>(x, b, 1.f);
      }
    }
    cf* dst = out + w * 16 * N;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        *reinterpret_cast<float4*>(dst + (g + 8 * half) * N + 8 * nt + 2 * q) =
            make_float4(x.re[nt][2 * half], x.im[nt][2 * half], x.re[nt][2 * half + 1], x.im[nt][2 * half + 1]);
  }
}

// ---------------------------------------------------------------- host
static unsigned short half_bits(float v) {
  const __half h = __float2half_rn(v);
  unsigned short u;
  std::memcpy(&u, &h, 2);
  return u;
}
static float half_value(unsigned short u) {
  __half h;
  std::memcpy(&h, &u, 2);
  return __half2float(h);
}

static tc_constants make_constants() {
  tc_constants c{};
  for (int m = 0; m < 2; ++m)
    for (int h = 0; h < 2; ++h)
      for (int kc = 0; kc < 2; ++kc)
        for (int nt = 0; nt < 4; ++nt)
          for (int lane = 0; lane < 32; ++lane) {
            const int g = lane / 4, q = lane % 4;
            auto entry = [&](int k) {  // B[k][n] for k-chunk kc, n-tile nt, column g
              const int kk = 16 * kc + k, n = 8 * nt + g;
              const double a = 2.0 * kPi * double((kk * n) % N) / N;
              const double v = m == 0 ? std::cos(a) : std::sin(a);
              const unsigned short hi = half_bits((float)v);
              if (h == 0) return hi;
              return half_bits((float)((v - (double)half_value(hi)) * 2048.0));
            };
            c.b[m][h][kc][nt][lane].x = entry(2 * q) | (unsigned(entry(2 * q + 1)) << 16);
            c.b[m][h][kc][nt][lane].y = entry(2 * q + 8) | (unsigned(entry(2 * q + 9)) << 16);
          }
  return c;
}

template <typename F>
static float median_ms(F&& launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 2; ++i) launch();
  std::vector<float> t;
  for (int i = 0; i < 7; ++i) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CHECK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  const int log2_lines = argc > 1 ? std::atoi(argv[1]) : 19;
  const long long lines = 1LL << log2_lines;
  const long long points = lines * N;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs; %lld lines of %d points (complex fp32)\n", prop.name, sms, lines, N);

  // canonical input [line][point], uniform in [-1, 1)
  std::vector<cf> x(points);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : x) v = {u(rng), u(rng)};
  std::vector<cf> grouped(points);  // the SIMT kernels' layout
  for (long long L = 0; L < lines; ++L)
    for (int p = 0; p < N; ++p) grouped[((L / 32) * 32 + p) * 32 + L % 32] = x[L * N + p];

  cf *d_line, *d_group, *d_out, *d_table;
  tc_constants* d_k;
  CHECK(cudaMalloc(&d_line, points * sizeof(cf)));
  CHECK(cudaMalloc(&d_group, points * sizeof(cf)));
  CHECK(cudaMalloc(&d_out, points * sizeof(cf)));
  CHECK(cudaMalloc(&d_table, 2 * N * sizeof(cf)));
  CHECK(cudaMalloc(&d_k, sizeof(tc_constants)));
  CHECK(cudaMemcpy(d_line, x.data(), points * sizeof(cf), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_group, grouped.data(), points * sizeof(cf), cudaMemcpyHostToDevice));
  const auto table = twiddle_table<float>(2 * N);
  CHECK(cudaMemcpy(d_table, table.data(), 2 * N * sizeof(cf), cudaMemcpyHostToDevice));
  const tc_constants k = make_constants();
  CHECK(cudaMemcpy(d_k, &k, sizeof k, cudaMemcpyHostToDevice));

  const int groups = (int)(lines / 32);
  const long long blocks16 = lines / 16;
  auto occupancy = [&](auto* fn) {
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, 128, 0));
    return per_sm;
  };
  auto regs = [&](auto* fn) {
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, fn));
    return a.numRegs;
  };
  // grids: one wave of resident blocks, each looping
  auto grid_of = [&](auto* fn) { return occupancy(fn) * sms; };

  // accuracy: one forward transform, first 4096 lines against a double DFT
  const int check_lines = (int)std::min<long long>(lines, 4096);
  std::vector<cf> got(points);
  auto rel_l2 = [&](bool grouped_layout) {
    CHECK(cudaMemcpy(got.data(), d_out, points * sizeof(cf), cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (int L = 0; L < check_lines; ++L)
      for (int f = 0; f < N; ++f) {
        double re = 0, im = 0;
        for (int p = 0; p < N; ++p) {
          const double a = -2.0 * kPi * double((p * f) % N) / N;
          re += x[L * N + p].re * std::cos(a) - x[L * N + p].im * std::sin(a);
          im += x[L * N + p].re * std::sin(a) + x[L * N + p].im * std::cos(a);
        }
        const cf g = grouped_layout ? got[((L / 32) * 32 + f) * 32 + L % 32] : got[(long long)L * N + f];
        num += (g.re - re) * (g.re - re) + (g.im - im) * (g.im - im);
        den += re * re + im * im;
      }
    return std::sqrt(num / den);
  };

  struct row {
    const char* name;
    int regs, blocks_per_sm;
    double err, ms1, ms16;
  };
  std::vector<row> rows;

  {
    auto* f1 = simt_block_kernel<1, false>;
    auto* f16 = simt_block_kernel<16, false>;
    auto* ff = simt_block_kernel<1, true>;
    const int gr = grid_of(f16);
    ff<<<gr, 128>>>(d_group, d_out, d_table, groups);
    CHECK(cudaDeviceSynchronize());
    const double err = rel_l2(true);
    const float a = median_ms([&] { f1<<<grid_of(f1), 128>>>(d_group, d_out, d_table, groups); });
    const float b = median_ms([&] { f16<<<gr, 128>>>(d_group, d_out, d_table, groups); });
    rows.push_back({"simt-block  (block_fft_t<32,4>)", regs(f16), occupancy(f16), err, a, b});
  }
  {
    auto* f1 = simt_thread_kernel<1, false>;
    auto* f16 = simt_thread_kernel<16, false>;
    auto* ff = simt_thread_kernel<1, true>;
    ff<<<grid_of(ff), 128>>>(d_group, d_out, lines);
    CHECK(cudaDeviceSynchronize());
    const double err = rel_l2(true);
    const float a = median_ms([&] { f1<<<grid_of(f1), 128>>>(d_group, d_out, lines); });
    const float b = median_ms([&] { f16<<<grid_of(f16), 128>>>(d_group, d_out, lines); });
    rows.push_back({"simt-thread (fft_t<float,32>)  ", regs(f16), occupancy(f16), err, a, b});
  }
  {
    auto* f1 = tc_kernel<1, false>;
    auto* f16 = tc_kernel<16, false>;
    auto* ff = tc_kernel<1, true>;
    ff<<<grid_of(ff), 128>>>(d_line, d_out, d_k, blocks16);
    CHECK(cudaDeviceSynchronize());
    const double err = rel_l2(false);
    const float a = median_ms([&] { f1<<<grid_of(f1), 128>>>(d_line, d_out, d_k, blocks16); });
    const float b = median_ms([&] { f16<<<grid_of(f16), 128>>>(d_line, d_out, d_k, blocks16); });
    rows.push_back({"tc-fp16x3   (mma m16n8k16)     ", regs(f16), occupancy(f16), err, a, b});
  }

  const double bytes = 2.0 * points * sizeof(cf);
  std::printf("%-32s %5s %7s | %9s %9s %8s | %10s %12s | %9s\n", "kernel", "regs", "blk/SM", "reps=1 ms", "reps=16", "GB/s(1)",
              "ns/line-tf", "Gline-tf/s", "rel L2");
  for (const row& r : rows) {
    const double marginal = (r.ms16 - r.ms1) * 1e-3 / (15.0 * 2.0 * lines);  // s per line transform
    std::printf("%-32s %5d %7d | %9.3f %9.3f %8.0f | %10.5f %12.1f | %9.2e\n", r.name, r.regs, r.blocks_per_sm, r.ms1,
                r.ms16, bytes / (r.ms1 * 1e-3) * 1e-9, marginal * 1e9, 1e-9 / marginal, r.err);
  }
  return 0;
}
