// gpuconv-bench conv3d: 'same' fp32 volume convolution, ours (conv::plan3d, CUDA backend,
// execute_device) against a cuFFT pipeline in the same run: zero-pad the volume to
// (D+K-1) x (H+K-1) x (W+K-1) rounded up per axis to the next 2^a 3^b 5^c 7^d size (as
// scipy/CuPy fftconvolve do with next_fast_len; an exact 158 = 2 x 79 would send cuFFT to
// Bluestein), 3D R2C, multiply by the PSF's spectrum (computed once, outside the timing),
// 3D C2R, crop. Zero boundary on both sides, so they compute the same function; ours is
// checked against the pipeline (rel L2). Rate: output voxels per second (Gvox/s).
// Cases: 128 x 512 x 512 (D x H x W) with K^3 PSFs (K = 15, 31, 63; --sizes picks), then the
// 256 x 1024 x 1024 stack with a 31^3 PSF through execute() on host buffers under a 4 GB
// memory cap (bands over D), timed once with its copies (no pipeline peer). Then gaussian
// (rank-1) PSFs of the same sizes: plan3d's separable method, its FFT tiles and the pipeline.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <cufft.h>

#include "bench.hpp"
#include "conv/plan3d.hpp"
#include "timing.cuh"

namespace gpuconv::bench {

namespace {

__global__ void pad3_kernel(const float* in, float* out, int d, int h, int w, int pd, int ph, int pw) {
  const long long count = (long long)pd * ph * pw;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
    const int c = (int)(i % pw), r = (int)((i / pw) % ph), s = (int)(i / ((long long)pw * ph));
    out[i] = (s < d && r < h && c < w) ? in[((long long)s * h + r) * w + c] : 0.f;
  }
}

__global__ void multiply3_kernel(cufftComplex* x, const cufftComplex* k, long long count, float scale) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
    const cufftComplex a = x[i], b = k[i];
    x[i] = {(a.x * b.x - a.y * b.y) * scale, (a.x * b.y + a.y * b.x) * scale};
  }
}

__global__ void crop3_kernel(const float* in, float* out, int d, int h, int w, int ph, int pw, int o) {
  const long long count = (long long)d * h * w;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
    const int c = (int)(i % w), r = (int)((i / w) % h), s = (int)(i / ((long long)w * h));
    out[i] = in[((long long)(s + o) * ph + r + o) * pw + c + o];
  }
}

unsigned grid_for(long long n) { return (unsigned)std::min<long long>((n + 255) / 256, 132LL * 32); }

// The smallest 2^a 3^b 5^c 7^d >= n.
int next_fast_size(int n) {
  for (int m = n;; ++m) {
    int r = m;
    for (int p : {2, 3, 5, 7})
      while (r % p == 0) r /= p;
    if (r == 1) return m;
  }
}

struct cufft_pipeline3d {
  int d, h, w, k, pd, ph, pw;
  cufftHandle r2c{}, c2r{};
  device_buffer<float> padded;
  device_buffer<cufftComplex> spectrum, kspec;

  cufft_pipeline3d(int d_, int h_, int w_, int k_, const std::vector<float>& psf, cudaStream_t s)
      : d(d_), h(h_), w(w_), k(k_), pd(next_fast_size(d_ + k_ - 1)), ph(next_fast_size(h_ + k_ - 1)),
        pw(next_fast_size(w_ + k_ - 1)), padded(std::size_t(pd) * ph * pw),
        spectrum(std::size_t(pd) * ph * (pw / 2 + 1)), kspec(spectrum.size()) {
    check_cufft(cufftPlan3d(&r2c, pd, ph, pw, CUFFT_R2C), "cufftPlan3d");
    check_cufft(cufftPlan3d(&c2r, pd, ph, pw, CUFFT_C2R), "cufftPlan3d");
    check_cufft(cufftSetStream(r2c, s), "cufftSetStream");
    check_cufft(cufftSetStream(c2r, s), "cufftSetStream");
    std::vector<float> kt(padded.size(), 0.f);
    for (int l = 0; l < k; ++l)
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) kt[(std::size_t(l) * ph + i) * pw + j] = psf[(std::size_t(l) * k + i) * k + j];
    GPUCONV_CUDA(cudaMemcpy(padded.data(), kt.data(), padded.bytes(), cudaMemcpyHostToDevice));
    check_cufft(cufftExecR2C(r2c, padded.data(), kspec.data()), "cufftExecR2C");
    GPUCONV_CUDA(cudaDeviceSynchronize());
  }
  ~cufft_pipeline3d() {
    cufftDestroy(r2c);
    cufftDestroy(c2r);
  }
  cufft_pipeline3d(const cufft_pipeline3d&) = delete;
  cufft_pipeline3d& operator=(const cufft_pipeline3d&) = delete;

  void run(const float* in, float* out, cudaStream_t s) {
    pad3_kernel<<<grid_for((long long)pd * ph * pw), 256, 0, s>>>(in, padded.data(), d, h, w, pd, ph, pw);
    check_cufft(cufftExecR2C(r2c, padded.data(), spectrum.data()), "cufftExecR2C");
    multiply3_kernel<<<grid_for((long long)spectrum.size()), 256, 0, s>>>(spectrum.data(), kspec.data(),
                                                                         (long long)spectrum.size(),
                                                                         float(1.0 / (double(pd) * ph * pw)));
    check_cufft(cufftExecC2R(c2r, spectrum.data(), padded.data()), "cufftExecC2R");
    crop3_kernel<<<grid_for((long long)d * h * w), 256, 0, s>>>(padded.data(), out, d, h, w, ph, pw, (k - 1) / 2);
    check_launch("cufft pipeline kernels");
  }
};

struct conv3_row {
  int d, h, w, k;
  conv::plan3d::tile_shape tile;
  double ms, cufft_ms, err;
  int pd, ph, pw;
  const char* path = "";
  double multi_ms = 0, multi_err = 0;  // the same tiles by the multipass route
};

}  // namespace

std::vector<float> make_psf3d(int k) {
  std::vector<float> psf(std::size_t(k) * k * k);
  for (std::size_t i = 0; i < psf.size(); ++i) psf[i] = float((i * 2654435761u) % 1000) / 1000.f / float(psf.size());
  return psf;
}

// gaussian3d with sigma (k - 1) / 8 on every axis: k = 2 round(4 sigma) + 1 taps, the product of
// three normalised 1D gaussians (as the CLI's gaussian3d, and scipy's gaussian_filter with
// truncate = 4): a rank-1 PSF, which plan3d runs as three 1D passes.
std::vector<float> make_gaussian_psf3d(int k) {
  const double sigma = (k - 1) / 8.0;
  std::vector<double> g(std::size_t(k), 0.0);
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += g[i] = std::exp(-0.5 * (i - (k - 1) / 2) * (i - (k - 1) / 2) / (sigma * sigma));
  std::vector<float> psf(std::size_t(k) * k * k);
  for (int l = 0; l < k; ++l)
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) psf[(std::size_t(l) * k + i) * k + j] = float(g[l] * g[i] * g[j] / (sum * sum * sum));
  return psf;
}

int run_conv3d(const options& opt) {
  cuda_stream stream;
  cudaDeviceProp prop{};
  GPUCONV_CUDA(cudaGetDeviceProperties(&prop, 0));
  const double copy_gbs = copy_bandwidth_gbs(std::size_t(1) << 30, opt.reps, stream);
  std::printf("gpuconv-bench conv3d on %s; 'same', zero boundary, fp32, median of %d runs after %d warm-up\n",
              prop.name, opt.reps, opt.warmup);
  std::printf("measured copy bandwidth (read + write): %.0f GB/s (byte floor: 8 B per voxel, %.0f Gvox/s)\n\n", copy_gbs,
              copy_gbs / 8);
  const std::uint64_t seed = (std::uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
  const int d = 128, h = 512, w = 512;
  const long long voxels = (long long)d * h * w;
  device_buffer<float> in(voxels), out(voxels), ref(voxels);
  fill_random(in.data(), voxels, seed, stream);
  std::vector<conv3_row> rows;
  for (int k : {15, 31, 63}) {
    if (!opt.sizes.empty() && std::find(opt.sizes.begin(), opt.sizes.end(), k) == opt.sizes.end()) continue;
    const auto psf = make_psf3d(k);
    conv::plan_options po;
    po.device = conv::backend::cuda;
    po.semantics.border = conv::boundary::zero;
    po.tile = opt.tile;
    conv::plan3d ours(d, h, w, 1, psf.data(), k, k, k, po);
    po.path = conv::cuda_path::multipass;  // the same tiles through fft::real_3d_plan
    conv::plan3d multi(d, h, w, 1, psf.data(), k, k, k, po);
    cufft_pipeline3d base(d, h, w, k, psf, stream);
    GPUCONV_CUDA(cudaMemsetAsync(out.data(), 0xFF, voxels * 4, stream));
    ours.execute_device(in.data(), out.data(), stream);
    base.run(in.data(), ref.data(), stream);
    conv3_row r{d, h, w, k, ours.tile(), 0, 0, relative_l2(out.data(), ref.data(), voxels, stream), base.pd, base.ph,
                base.pw};
    r.path = conv::to_string(ours.path());
    GPUCONV_CUDA(cudaMemsetAsync(out.data(), 0xFF, voxels * 4, stream));
    multi.execute_device(in.data(), out.data(), stream);
    r.multi_err = relative_l2(out.data(), ref.data(), voxels, stream);
    r.ms = median_ms([&](cudaStream_t s) { ours.execute_device(in.data(), out.data(), s); }, opt.warmup, opt.reps, stream);
    r.multi_ms = median_ms([&](cudaStream_t s) { multi.execute_device(in.data(), out.data(), s); }, opt.warmup, opt.reps, stream);
    r.cufft_ms = median_ms([&](cudaStream_t s) { base.run(in.data(), ref.data(), s); }, opt.warmup, opt.reps, stream);
    rows.push_back(r);
    std::fprintf(stderr, "K=%d done\n", k);
  }
  std::printf("%15s %4s %12s %9s | %9s %7s | %9s %7s | %9s %7s %14s | %6s %8s %8s\n", "D x H x W", "K", "tile", "path",
              "ours ms", "Gvox/s", "multi ms", "Gvox/s", "cuFFT ms", "Gvox/s", "padded", "ratio", "rel L2", "multi L2");
  for (const auto& r : rows) {
    char shape[32], tile[32], padded[32];
    std::snprintf(shape, sizeof shape, "%dx%dx%d", r.d, r.h, r.w);
    std::snprintf(tile, sizeof tile, "%dx%dx%d", r.tile.tile_d, r.tile.tile_h, r.tile.tile_w);
    std::snprintf(padded, sizeof padded, "%dx%dx%d", r.pd, r.ph, r.pw);
    std::printf("%15s %4d %12s %9s | %9.3f %7.2f | %9.3f %7.2f | %9.3f %7.2f %14s | %5.2fx %8.1e %8.1e\n", shape, r.k,
                tile, r.path, r.ms, voxels / (r.ms * 1e6), r.multi_ms, voxels / (r.multi_ms * 1e6), r.cufft_ms,
                voxels / (r.cufft_ms * 1e6), padded, r.cufft_ms / r.ms, r.err, r.multi_err);
  }
  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    f << "gpu,d,h,w,k,tile_d,tile_h,tile_w,path,ms,multipass_ms,cufft_ms,gvox_s,cufft_gvox_s,rel_l2\n";
    for (const auto& r : rows)
      f << '"' << prop.name << "\"," << r.d << ',' << r.h << ',' << r.w << ',' << r.k << ',' << r.tile.tile_d << ','
        << r.tile.tile_h << ',' << r.tile.tile_w << ',' << r.path << ',' << r.ms << ',' << r.multi_ms << ',' << r.cufft_ms << ',' << voxels / (r.ms * 1e6) << ','
        << voxels / (r.cufft_ms * 1e6) << ',' << r.err << '\n';
  }
  for (const auto& r : rows)
    if (!(r.err < 1e-5) || !(r.multi_err < 1e-5)) {
      std::fprintf(stderr, "gpuconv-bench: K=%d disagrees with the cuFFT pipeline (rel L2 %.2e, multipass %.2e)\n", r.k,
                   r.err, r.multi_err);
      return 3;
    }

  // gaussian (rank-1) PSFs: plan3d's automatic choice (the separable method) against its FFT
  // tiles (forced by a path) and the cuFFT pipeline, same PSF
  struct gauss_row {
    int k;
    double ms, tiles_ms, cufft_ms, err, tiles_err;
    const char* method;
  };
  std::vector<gauss_row> grows;
  for (int k : {15, 31, 63}) {
    if (!opt.sizes.empty() && std::find(opt.sizes.begin(), opt.sizes.end(), k) == opt.sizes.end()) continue;
    const auto psf = make_gaussian_psf3d(k);
    conv::plan_options po;
    po.device = conv::backend::cuda;
    po.semantics.border = conv::boundary::zero;
    conv::plan3d ours(d, h, w, 1, psf.data(), k, k, k, po);
    po.path = conv::cuda_path::three_pass;
    conv::plan3d tiles(d, h, w, 1, psf.data(), k, k, k, po);
    cufft_pipeline3d base(d, h, w, k, psf, stream);
    base.run(in.data(), ref.data(), stream);
    gauss_row r{k, 0, 0, 0, 0, 0, conv::to_string(ours.method())};
    GPUCONV_CUDA(cudaMemsetAsync(out.data(), 0xFF, voxels * 4, stream));
    tiles.execute_device(in.data(), out.data(), stream);
    r.tiles_err = relative_l2(out.data(), ref.data(), voxels, stream);
    GPUCONV_CUDA(cudaMemsetAsync(out.data(), 0xFF, voxels * 4, stream));
    ours.execute_device(in.data(), out.data(), stream);
    r.err = relative_l2(out.data(), ref.data(), voxels, stream);
    r.ms = median_ms([&](cudaStream_t s) { ours.execute_device(in.data(), out.data(), s); }, opt.warmup, opt.reps, stream);
    r.tiles_ms =
        median_ms([&](cudaStream_t s) { tiles.execute_device(in.data(), out.data(), s); }, opt.warmup, opt.reps, stream);
    r.cufft_ms = median_ms([&](cudaStream_t s) { base.run(in.data(), ref.data(), s); }, opt.warmup, opt.reps, stream);
    grows.push_back(r);
  }
  if (!grows.empty()) {
    std::printf("\ngaussian3d PSFs (sigma (K-1)/8, rank-1), %dx%dx%d:\n", d, h, w);
    std::printf("%4s %10s | %9s %7s | %9s %7s | %9s %7s | %8s %8s\n", "K", "method", "ours ms", "Gvox/s", "tiles ms",
                "Gvox/s", "cuFFT ms", "Gvox/s", "rel L2", "tiles L2");
    for (const auto& r : grows)
      std::printf("%4d %10s | %9.3f %7.2f | %9.3f %7.2f | %9.3f %7.2f | %8.1e %8.1e\n", r.k, r.method, r.ms,
                  voxels / (r.ms * 1e6), r.tiles_ms, voxels / (r.tiles_ms * 1e6), r.cufft_ms,
                  voxels / (r.cufft_ms * 1e6), r.err, r.tiles_err);
    for (const auto& r : grows)
      if (!(r.err < 1e-5) || !(r.tiles_err < 1e-5)) {
        std::fprintf(stderr, "gpuconv-bench: gaussian K=%d disagrees with the cuFFT pipeline (rel L2 %.2e, tiles %.2e)\n",
                     r.k, r.err, r.tiles_err);
        return 3;
      }
  }

  // the large stack: host buffers, bands over D under a 4 GB cap
  if (opt.sizes.empty() || std::find(opt.sizes.begin(), opt.sizes.end(), 1024) != opt.sizes.end()) {
    const long long D = 256, H = 1024, W = 1024, n = D * H * W;
    std::vector<float> host_in(n), host_out(n, -1.f);
    for (long long i = 0; i < n; ++i) host_in[i] = float((i * 2654435761u) % 1000) / 1000.f;
    const auto psf = make_psf3d(31);
    conv::plan_options po;
    po.device = conv::backend::cuda;
    po.memory_limit = std::size_t(4) << 30;
    conv::plan3d big(D, H, W, 1, psf.data(), 31, 31, 31, po);
    const auto t0 = std::chrono::steady_clock::now();
    big.execute(host_in.data(), host_out.data());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("\n256x1024x1024 fp32, 31^3 PSF, reflect101, execute() on host buffers, 4 GB cap (bands over D): "
                "%.3f s (%.2f Gvox/s, copies included), tile %dx%dx%d; first output %.4f\n",
                s, n / (s * 1e9), big.tile().tile_d, big.tile().tile_h, big.tile().tile_w, host_out[0]);
    const auto gpsf = make_gaussian_psf3d(31);
    conv::plan3d gbig(D, H, W, 1, gpsf.data(), 31, 31, 31, po);
    const auto g0 = std::chrono::steady_clock::now();
    gbig.execute(host_in.data(), host_out.data());
    const double gs = std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
    std::printf("the same with a 31^3 gaussian (sigma 3.75, rank-1): %.3f s (%.2f Gvox/s, copies included), method %s; "
                "first output %.4f\n",
                gs, n / (gs * 1e9), conv::to_string(gbig.method()), host_out[0]);
  }
  return 0;
}

}  // namespace gpuconv::bench
