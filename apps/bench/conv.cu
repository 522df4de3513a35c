// gpuconv-bench conv: 'same' fp32 convolution, ours (conv::plan, CUDA backend) against the
// classic cuFFT pipeline in the same run: zero-pad each image to (H+K-1) x (W+K-1), 2D R2C,
// pointwise multiply by the kernel's spectrum (computed once, outside the timing), 2D C2R,
// crop. Both use zero boundary so they compute the same function; ours is checked against
// the pipeline on every case (relative L2). Floor: 8 bytes per output pixel (read the image
// once, write the result once) at the measured copy bandwidth.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <cufft.h>

#include "bench.hpp"
#include "conv/plan.hpp"
#include "timing.cuh"

namespace gpuconv::bench {

namespace {

__global__ void pad_kernel(const float* in, float* out, int h, int w, int ph, int pw, long long count) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
    const long long img = i / ((long long)ph * pw);
    const int r = (int)((i / pw) % ph), c = (int)(i % pw);
    out[i] = (r < h && c < w) ? in[(img * h + r) * w + c] : 0.f;
  }
}

__global__ void multiply_kernel(cufftComplex* x, const cufftComplex* k, long long per_image, long long count, float scale) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
    const cufftComplex a = x[i], b = k[i % per_image];
    x[i] = {(a.x * b.x - a.y * b.y) * scale, (a.x * b.y + a.y * b.x) * scale};
  }
}

__global__ void crop_kernel(const float* in, float* out, int h, int w, int ph, int pw, int oy, int ox, long long count) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
    const long long img = i / ((long long)h * w);
    const int r = (int)((i / w) % h), c = (int)(i % w);
    out[i] = in[(img * ph + r + oy) * pw + c + ox];
  }
}

__global__ void empty_kernel() {}

unsigned blocks(long long n) {
  static const int sms = [] {
    int device = 0, count = 0;
    GPUCONV_CUDA(cudaGetDevice(&device));
    GPUCONV_CUDA(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  }();
  return (unsigned)std::min<long long>((n + 255) / 256, (long long)sms * 32);
}

// The classic cuFFT pipeline for `batch` images of h x w and a k x k kernel, 'same' mode.
struct cufft_pipeline {
  int h, w, k, ph, pw, batch;
  cufftHandle r2c{}, c2r{};
  device_buffer<float> padded;
  device_buffer<cufftComplex> spectrum, kspec;

  cufft_pipeline(int h_, int w_, int k_, int batch_, const std::vector<float>& kernel, cudaStream_t s)
      : h(h_), w(w_), k(k_), ph(h_ + k_ - 1), pw(w_ + k_ - 1), batch(batch_),
        padded(std::size_t(ph) * pw * batch), spectrum(std::size_t(ph) * (pw / 2 + 1) * batch),
        kspec(std::size_t(ph) * (pw / 2 + 1)) {
    int dims[2] = {ph, pw};
    check_cufft(cufftPlanMany(&r2c, 2, dims, nullptr, 1, 0, nullptr, 1, 0, CUFFT_R2C, batch), "cufftPlanMany");
    check_cufft(cufftPlanMany(&c2r, 2, dims, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2R, batch), "cufftPlanMany");
    check_cufft(cufftSetStream(r2c, s), "cufftSetStream");
    check_cufft(cufftSetStream(c2r, s), "cufftSetStream");
    // kernel spectrum, once: the kernel at the top-left corner of a zero tile
    std::vector<float> kt(std::size_t(ph) * pw, 0.f);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) kt[std::size_t(i) * pw + j] = kernel[std::size_t(i) * k + j];
    device_buffer<float> d_kt(kt.size());
    GPUCONV_CUDA(cudaMemcpy(d_kt.data(), kt.data(), d_kt.bytes(), cudaMemcpyHostToDevice));
    cufftHandle one{};
    check_cufft(cufftPlan2d(&one, ph, pw, CUFFT_R2C), "cufftPlan2d");
    check_cufft(cufftExecR2C(one, d_kt.data(), kspec.data()), "cufftExecR2C");
    GPUCONV_CUDA(cudaDeviceSynchronize());
    cufftDestroy(one);
  }
  ~cufft_pipeline() { cufftDestroy(r2c); cufftDestroy(c2r); }

  void run(const float* in, float* out, cudaStream_t s) {
    const long long padded_count = (long long)ph * pw * batch, spec = (long long)ph * (pw / 2 + 1);
    pad_kernel<<<blocks(padded_count), 256, 0, s>>>(in, padded.data(), h, w, ph, pw, padded_count);
    check_cufft(cufftExecR2C(r2c, padded.data(), spectrum.data()), "cufftExecR2C");
    multiply_kernel<<<blocks(spec * batch), 256, 0, s>>>(spectrum.data(), kspec.data(), spec, spec * batch, 1.0f / (float(ph) * pw));
    check_cufft(cufftExecC2R(c2r, spectrum.data(), padded.data()), "cufftExecC2R");
    const long long out_count = (long long)h * w * batch;
    crop_kernel<<<blocks(out_count), 256, 0, s>>>(padded.data(), out, h, w, ph, pw, (k - 1) / 2, (k - 1) / 2, out_count);
    check_launch("cufft pipeline kernels");
  }
};

struct conv_row {
  int size, batch, k, tile_h, tile_w;
  conv::cuda_path path;
  bool u8;
  double ms, cufft_ms, err, floor_ms, flop_ms;
  int tuned_tile = 0;  // plan_options::autotune's choice (fp32 rows)
  conv::cuda_path tuned_path = conv::cuda_path::automatic;
  double tuned_ms = 0;
  double streamed_ms = 0, cufft_streamed_ms = 0;  // per call, calls back to back (median_ms_streamed)
  double host_us = 0;                             // ours: host time a call takes to queue its work
};

// Flops of the chosen method per run: direct K^2 and separable 2K multiply-adds per output;
// for the FFT paths, complex 2D FFTs of T^2 points cost 5 T^2 log2(T^2)
// each way; the fused kernel runs one complex transform pair per two tiles (a tile in
// each of the real and imaginary parts) plus a complex multiply (6 flops) per point, and so
// does the three-pass path; the multi-pass pipeline runs real transforms (half the complex
// cost) and multiplies half a spectrum per tile.
double conv_flops(const conv::plan& p, long long planes) {
  const auto& t = p.tiles();
  const double k = double(p.tiles().tile_h - p.tiles().valid_h + 1);  // direct and separable tiles hold the kernel's halo
  const double outputs = double(planes) * p.output_height() * p.output_width();
  if (p.path() == conv::cuda_path::direct) return 2 * k * k * outputs;  // square kernels here
  if (p.path() == conv::cuda_path::separable) return 4 * k * outputs;
  const double n = double(t.tile_h) * t.tile_w, tiles = double(planes) * t.tiles_per_plane();
  const double fft = 5 * n * std::log2(n);
  return p.path() != conv::cuda_path::multipass ? std::ceil(tiles / 2) * (2 * fft + 6 * n) : tiles * (fft + 3 * n);
}

const char* path_name(conv::cuda_path p) {
  switch (p) {
    case conv::cuda_path::fused: return "fused";
    case conv::cuda_path::three_pass: return "3pass";
    case conv::cuda_path::multipass: return "multi";
    case conv::cuda_path::direct: return "direct";
    case conv::cuda_path::separable: return "separ";
    default: return "-";
  }
}

}  // namespace

int run_conv(const options& opt) {
  // --sizes: those kernel sizes, any K >= 1 (9 x 9 is the tensor-core walk's largest); else the table's
  std::vector<int> kernel_sizes = opt.sizes;
  if (kernel_sizes.empty()) kernel_sizes = {3, 5, 7, 11, 15, 31, 63, 127};
  for (int k : kernel_sizes)
    if (k < 1) throw std::invalid_argument("--sizes: kernel size " + std::to_string(k) + " is not >= 1");
  cuda_stream stream;
  cudaDeviceProp prop{};
  GPUCONV_CUDA(cudaGetDeviceProperties(&prop, 0));
  const double copy_gbs = copy_bandwidth_gbs(std::size_t(1) << 30, opt.reps, stream);
  const double tflops = fma_peak_tflops(stream);
  std::printf("gpuconv-bench conv on %s; 'same', zero boundary, median of %d runs after %d warm-up\n", prop.name,
              opt.reps, opt.warmup);
  std::printf("measured copy bandwidth (read + write): %.0f GB/s; fp32 FMA rate: %.1f TFLOP/s\n", copy_gbs, tflops);
  std::printf("byte floor: 8 B per output pixel in fp32 (%.0f Gpix/s), 2 B in uint8 (%.0f Gpix/s)\n\n", copy_gbs / 8,
              copy_gbs / 2);
  {  // the timing's own floor: a kernel that does nothing, timed as the cases are
    auto empty = [](cudaStream_t s) { empty_kernel<<<1, 32, 0, s>>>(); };
    const float alone = median_ms(empty, opt.warmup, opt.reps, stream);
    const float streamed = median_ms_streamed(empty, opt.warmup, opt.reps, 20, stream);
    check_launch("empty_kernel");
    double host_us = 0;
    median_ms_streamed(empty, opt.warmup, opt.reps, 20, stream, &host_us);
    std::printf("an empty kernel: %.1f us timed alone from an idle stream, %.1f us a launch back to back (%.1f us\n"
                "of host time to queue each)\n\n", alone * 1e3, streamed * 1e3, host_us);
  }
  // the last two: the issue's small-image batches (1000 x 28^2, 256 x 100^2), small kernels only
  const int shapes[5][2] = {{4096, 1}, {256, 64}, {64, 1024}, {28, 1000}, {100, 256}};
  std::vector<conv_row> rows;
  constexpr int streamed_calls = 20;
  const std::uint64_t seed = (std::uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
  for (const auto& shape : shapes) {
    const int size = shape[0], batch = shape[1];
    const long long pixels = (long long)size * size * batch;
    rotating_sets io(pixels, seed, stream);
    auto& in = io.in;
    auto& out = io.out;
    const int sets = io.size();
    device_buffer<float> ref(pixels);
    std::vector<device_buffer<std::uint8_t>> in8, out8;
    for (int k : kernel_sizes) {
      if ((size == 28 || size == 100) && k > 15) continue;
      std::vector<float> kernel(std::size_t(k) * k);
      for (std::size_t i = 0; i < kernel.size(); ++i) kernel[i] = float((i * 2654435761u) % 1000) / 1000.f - 0.5f;
      conv::plan_options po;
      po.device = conv::backend::cuda;
      po.semantics.border = conv::boundary::zero;
      po.tile = opt.tile;
      conv::plan ours(size, size, batch, kernel.data(), k, k, po);
      cufft_pipeline base(size, size, k, batch, kernel, stream);
      GPUCONV_CUDA(cudaMemsetAsync(out[0].data(), 0xFF, pixels * 4, stream));
      ours.execute_device(in[0].data(), out[0].data(), stream);
      base.run(in[0].data(), ref.data(), stream);
      const double err = relative_l2(out[0].data(), ref.data(), pixels, stream);
      const double flop_ms = conv_flops(ours, batch) / (tflops * 1e12) * 1e3;
      conv_row r{size, batch, k, ours.tiles().tile_h, ours.tiles().tile_w, ours.path(), false, 0, 0, err,
                 8.0 * pixels / (copy_gbs * 1e9) * 1e3, flop_ms};
      int i = 0, j = 0;
      r.ms = median_ms([&](cudaStream_t s) { ++i; ours.execute_device(in[i % sets].data(), out[i % sets].data(), s); },
                       opt.warmup, opt.reps, stream);
      r.cufft_ms = median_ms([&](cudaStream_t s) { ++j; base.run(in[j % sets].data(), ref.data(), s); }, opt.warmup,
                             opt.reps, stream);
      r.streamed_ms = median_ms_streamed(
          [&](cudaStream_t s) { ++i; ours.execute_device(in[i % sets].data(), out[i % sets].data(), s); }, opt.warmup,
          opt.reps, streamed_calls, stream, &r.host_us);
      r.cufft_streamed_ms = median_ms_streamed([&](cudaStream_t s) { ++j; base.run(in[j % sets].data(), ref.data(), s); },
                                               opt.warmup, opt.reps, streamed_calls, stream);
      {  // the same plan tuned at plan time (plan_options::autotune)
        conv::plan_options pt = po;
        pt.autotune = true;
        conv::plan tuned(size, size, batch, kernel.data(), k, k, pt);
        r.tuned_tile = tuned.tiles().tile_h;
        r.tuned_path = tuned.path();
        int it = 0;
        r.tuned_ms = median_ms([&](cudaStream_t s) { ++it; tuned.execute_device(in[it % sets].data(), out[it % sets].data(), s); },
                               opt.warmup, opt.reps, stream);
      }
      rows.push_back(r);
      // the 8-bit path of the single-image case: uint8 in and out, 2 bytes a pixel
      if (batch == 1 && k <= 15) {
        if (in8.empty())
          for (int s8 = 0; s8 < sets; ++s8) {
            in8.emplace_back(pixels);
            out8.emplace_back(pixels);
            to_u8(in[s8].data(), in8.back().data(), pixels, stream);
          }
        // the float reference on the same uint8 values: convert back into `ref`'s input set
        device_buffer<float> as_float(pixels);
        conv_row r8 = r;
        r8.u8 = true;
        r8.tuned_tile = 0;
        r8.floor_ms = 2.0 * pixels / (copy_gbs * 1e9) * 1e3;
        {
          std::vector<std::uint8_t> h8(pixels);
          GPUCONV_CUDA(cudaMemcpyAsync(h8.data(), in8[0].data(), pixels, cudaMemcpyDeviceToHost, stream));
          GPUCONV_CUDA(cudaStreamSynchronize(stream));
          std::vector<float> hf(h8.begin(), h8.end());
          GPUCONV_CUDA(cudaMemcpy(as_float.data(), hf.data(), pixels * 4, cudaMemcpyHostToDevice));
        }
        base.run(as_float.data(), ref.data(), stream);
        GPUCONV_CUDA(cudaMemsetAsync(out8[0].data(), 0x5A, pixels, stream));
        ours.execute_device(in8[0].data(), out8[0].data(), stream);
        r8.err = max_u8_difference(out8[0].data(), ref.data(), pixels, stream);
        int i8 = 0;
        r8.ms = median_ms([&](cudaStream_t s) { ++i8; ours.execute_device(in8[i8 % sets].data(), out8[i8 % sets].data(), s); },
                          opt.warmup, opt.reps, stream);
        r8.streamed_ms = median_ms_streamed(
            [&](cudaStream_t s) { ++i8; ours.execute_device(in8[i8 % sets].data(), out8[i8 % sets].data(), s); },
            opt.warmup, opt.reps, streamed_calls, stream, &r8.host_us);
        r8.cufft_streamed_ms = 0;
        rows.push_back(r8);
      }
      std::fprintf(stderr, "conv %dx%d x%d k=%d done\n", size, size, batch, k);
    }
  }
  std::printf("%-16s %4s %6s %9s | %8s %8s %6s %7s | %8s %8s %7s | %9s %8s %8s | %6s %8s | %s\n", "images", "K", "path",
              "tile", "ms", "Gpix/s", "%copy", "%floor", "strm ms", "Gpix/s", "host us", "cuFFT ms", "Gpix/s", "strm ms", "ratio",
              "err", "autotuned");
  for (const auto& r : rows) {
    const double px = double(r.size) * r.size * r.batch;
    char img[32], tile[32], cufft_streamed[16] = "-";
    std::snprintf(img, sizeof img, "%dx%d^2%s", r.batch, r.size, r.u8 ? " u8" : "");
    std::snprintf(tile, sizeof tile, "%dx%d", r.tile_h, r.tile_w);
    if (r.cufft_streamed_ms > 0) std::snprintf(cufft_streamed, sizeof cufft_streamed, "%.3f", r.cufft_streamed_ms);
    const double floor = std::max(r.floor_ms, r.flop_ms);
    char tuned[48] = "";
    if (r.tuned_tile)
      std::snprintf(tuned, sizeof tuned, "%s %d %.3f ms", path_name(r.tuned_path), r.tuned_tile, r.tuned_ms);
    std::printf("%-16s %4d %6s %9s | %8.3f %8.1f %5.1f%% %6.1f%% | %8.3f %8.1f %7.1f | %9.3f %8.1f %8s | %5.1fx %8.1e | %s\n",
                img, r.k, path_name(r.path), tile, r.ms, px / (r.ms * 1e6), 100.0 * r.floor_ms / r.ms,
                100.0 * floor / r.ms, r.streamed_ms, px / (r.streamed_ms * 1e6), r.host_us, r.cufft_ms, px / (r.cufft_ms * 1e6),
                cufft_streamed, r.cufft_ms / r.ms, r.err, tuned);
  }
  std::printf("\n%%copy: the byte floor (8 B/px fp32, 2 B/px uint8 at the copy rate) over the time; %%floor: the larger\n"
              "of the byte floor and the flop floor (the path's FFT flops at the FMA rate) over the time.\n"
              "err: relative L2 against the cuFFT pipeline (fp32); for u8 the largest |difference| from the\n"
              "pipeline's result rounded and saturated (1 = a value near a half step rounded the other way).\n"
              "ms: one call timed alone from an idle stream (the host's launch latency included); strm ms: per\n"
              "call with %d calls back to back between the events (what a caller keeping the GPU busy sees);\n"
              "host us: the host time a call of ours takes to queue its work in that loop.\n",
              streamed_calls);
  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    f << "gpu,copy_gbs,tflops,size,batch,k,type,path,tile_h,tile_w,ms,cufft_ms,err,byte_floor_ms,flop_floor_ms,streamed_ms,cufft_streamed_ms\n";
    for (const auto& r : rows)
      f << '"' << prop.name << "\"," << copy_gbs << ',' << tflops << ',' << r.size << ',' << r.batch << ',' << r.k << ','
        << (r.u8 ? "u8" : "f32") << ',' << path_name(r.path) << ',' << r.tile_h << ',' << r.tile_w << ','
        << r.ms << ',' << r.cufft_ms << ',' << r.err << ',' << r.floor_ms << ',' << r.flop_ms << ','
        << r.streamed_ms << ',' << r.cufft_streamed_ms << '\n';
  }
  for (const auto& r : rows)
    if (r.u8 ? !(r.err <= 1) : !(r.err < 1e-5)) {
      std::fprintf(stderr, "gpuconv-bench: conv %d^2 x%d K=%d%s disagrees with the cuFFT pipeline (err %.2e)\n", r.size,
                   r.batch, r.k, r.u8 ? " u8" : "", r.err);
      return 3;
    }
  return 0;
}

}  // namespace gpuconv::bench
