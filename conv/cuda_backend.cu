// CUDA backend. Three paths, chosen at plan time by the cost model (tiling.hpp):
// - fused: one launch of the fused tile kernel (fused_tile.cuh), two tiles of 32..128 per
//   block, the image read once and the output written once;
// - three-pass, for kernels too large for a fused tile: tiles of 256..1024 (three_pass.cuh),
//   the image read once and the output written once, the tile spectra through global
//   memory between the passes (in chunks of pairs under the memory cap);
// - multi-pass, for what the others cannot hold: tiles in chunks that fit the
//   workspace cap; per chunk gather (boundary rule applied in the loader) ->
//   fft::real_2d_plan::convolve (row R2C, transpose, fused column FFT * spectrum * IFFT,
//   transpose, row C2R) -> scatter of the valid outputs.
// The kernel spectrum is computed once, at plan time.
//
// execute() on host buffers stages the image through device memory. When the image and its
// output do not fit the memory cap, it runs in bands of output rows: a band's input rows
// (with the rows the kernel reaches beyond it, mapped by the boundary rule on the host) are
// uploaded as an image of their own, convolved with 'valid' geometry along y and the plan's
// geometry along x, and the band's output rows copied back.
#include <algorithm>

#include "backend.hpp"
#include "fft/device/buffer.hpp"
#include "fft/plan/real_2d_plan.hpp"
#include "fused.hpp"
#include "three_pass.hpp"
#include "pixel.cuh"

// Tuning builds: 1 sizes the three-pass chunks to half the L2 (so that the tile spectra
// stay in L2 between the passes); 0 (default) by the memory cap alone, one chunk in
// practice. Measured on the H100: the smaller launches' tails cost more than the L2 saves
// (4096^2, K = 3..127: 7-20% slower with 1; docs/notes-conv.md).
#ifndef GPUCONV_THREE_PASS_L2
#define GPUCONV_THREE_PASS_L2 0
#endif

namespace gpuconv::conv {

namespace {

using cf = fft::complex_t<float>;

template <typename in_t>
__global__ void gather_kernel(const in_t* __restrict__ in, float* __restrict__ tiles, tile_map m, long long first,
                              long long count, long long total) {
  const long long per_tile = (long long)m.tile_h * m.tile_w;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count * per_tile;
       i += (long long)gridDim.x * blockDim.x) {
    const long long local = i / per_tile, g = first + local;
    const int e = (int)(i - local * per_tile), u = e / m.tile_w, v = e - u * m.tile_w;
    tiles[i] = g < total ? m.gather(in, g, u, v) : 0.f;
  }
}

template <typename out_t>
__global__ void scatter_kernel(const float* __restrict__ tiles, out_t* __restrict__ out, tile_map m, long long first,
                               long long count, long long total) {
  const long long per_tile = (long long)m.valid_h * m.valid_w;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count * per_tile;
       i += (long long)gridDim.x * blockDim.x) {
    const long long local = i / per_tile, g = first + local;
    if (g >= total) continue;
    const int e = (int)(i - local * per_tile), a = e / m.valid_w, b = e - a * m.valid_w;
    const long long o = m.output_index(g, a, b);
    if (o >= 0)
      out[o] = store_pixel<out_t>(tiles[local * m.tile_h * m.tile_w + (long long)(a + m.kh - 1) * m.tile_w + (b + m.kw - 1)]);
  }
}

// Calls f(T{}) with the element type of p.
template <typename F>
void dispatch_pixel(pixel p, F&& f) {
  switch (p) {
    case pixel::f32: f(float{}); return;
    case pixel::u8: f(std::uint8_t{}); return;
    case pixel::u16: f(std::uint16_t{}); return;
  }
}

class cuda_backend final : public plan::impl {
 public:
  explicit cuda_backend(problem p) : impl(std::move(p)) {
    int device = 0, sms = 0;
    GPUCONV_CUDA(cudaGetDevice(&device));
    GPUCONV_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    max_grid_ = (unsigned)sms * 16;
    sms_ = sms;
    int l2 = 0;
    GPUCONV_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    l2_bytes_ = GPUCONV_THREE_PASS_L2 ? (std::size_t)l2 : 0;
    const auto& o = prob.options;
    std::size_t free_bytes = 0, total_bytes = 0;
    GPUCONV_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    cap_ = o.memory_limit ? o.memory_limit : free_bytes / 2;
    configure(choose_cuda_tiling(prob.geo.out_h, prob.geo.out_w, prob.output_planes(), prob.kh, prob.kw, o.path, o.tile, sms));
    if (o.autotune && o.path == cuda_path::automatic && o.tile == 0) autotune();
  }

  backend kind() const override { return backend::cuda; }
  cuda_path path() const override { return path_; }

  void execute_device(const void* in, void* out, pixel p, cudaStream_t stream) override {
    run(in, out, p, prob.map, stream);
  }

  void execute(const void* in, void* out, pixel p) override {
    const std::size_t bytes = pixel_bytes(p);
    const std::size_t in_bytes = std::size_t(prob.input_elements()) * bytes;
    const std::size_t out_bytes = std::size_t(prob.output_elements()) * bytes;
    if (in_bytes + out_bytes <= staging_bytes_) {
      ensure_staging();
      char* d_in = staging_.data();
      char* d_out = d_in + align_up(in_bytes);
      GPUCONV_CUDA(cudaMemcpyAsync(d_in, in, in_bytes, cudaMemcpyHostToDevice, stream_));
      run(d_in, d_out, p, prob.map, stream_);
      GPUCONV_CUDA(cudaMemcpyAsync(out, d_out, out_bytes, cudaMemcpyDeviceToHost, stream_));
      GPUCONV_CUDA(cudaStreamSynchronize(stream_));
      return;
    }
    execute_in_bands(static_cast<const char*>(in), static_cast<char*>(out), p);
  }

 private:
  // Sets up the path and tiling of `choice`: the fused kernel's spectra, the three-pass
  // path's spectra and chunk, or the multi-pass plan, workspace and spectra, within the
  // memory cap.
  void configure(const cuda_tiling& choice) {
    prob.set_tiling(choice.tiles);
    path_ = choice.path;
    fused_.reset();
    three_.reset();
    fft_.reset();
    tiles_ = device_buffer<float>();
    spectrum_ = device_buffer<cf>();
    // Staging for execute() on host buffers takes what the image and its output need (at
    // 4 bytes a pixel, the widest type), at most the cap on the fused path (no workspace) and
    // half of it on the multi-pass path, whose workspace takes the rest.
    const std::size_t io_bytes = std::size_t(prob.input_elements() + prob.output_elements()) * 4;
    const bool fused = choice.path == cuda_path::fused;
    staging_bytes_ = std::min(io_bytes, fused ? cap_ : cap_ / 2);
    const std::size_t work_cap = cap_ > staging_bytes_ ? cap_ - staging_bytes_ : 0;
    if (fused) {
      fused_ = std::make_unique<fused_tiles>(prob.tiles.tile_h, prob.kernel, prob.kernels, prob.kh, prob.kw);
      return;
    }
    if (choice.path == cuda_path::three_pass) {
      const int t = prob.tiles.tile_h;
      if (work_cap < three_pass_tiles::pair_bytes(t))
        throw std::invalid_argument("conv::plan: the memory cap (" + std::to_string(cap_) + " bytes) is below one " +
                                    std::to_string(t) + " x " + std::to_string(t) + " tile pair's workspace");
      const long long pairs = (prob.map.tiles_per_kernel + 1) / 2;
      three_ = std::make_unique<three_pass_tiles>(t, prob.kernel, prob.kernels, prob.kh, prob.kw,
                                                  three_pass_tiles::chunk_pairs(t, pairs, work_cap, l2_bytes_));
      return;
    }
    const long long th = prob.tiles.tile_h, tw = prob.tiles.tile_w;
    // per tile: the real tile and the 2D plan's two complex work buffers
    const long long per_tile = th * tw * 4 + 2 * th * (tw / 2 + 1) * 8;
    if ((long long)work_cap < per_tile)
      throw std::invalid_argument("conv::plan: the memory cap (" + std::to_string(cap_) + " bytes) is below one " +
                                  std::to_string(th) + " x " + std::to_string(tw) + " tile's workspace");
    chunk_ = std::clamp<long long>((long long)(work_cap / per_tile), 1, prob.total_tiles());
    fft_ = std::make_unique<fft::real_2d_plan>((int)th, (int)tw, chunk_);
    tiles_ = device_buffer<float>(std::size_t(chunk_) * th * tw);
    spectrum_ = device_buffer<cf>(std::size_t(fft_->spectrum_elements()) * prob.kernels);
    device_buffer<float> d_k(std::size_t(th) * tw);
    for (int k = 0; k < prob.kernels; ++k) {
      const auto tile = prob.kernel_tile(k);
      GPUCONV_CUDA(cudaMemcpy(d_k.data(), tile.data(), d_k.bytes(), cudaMemcpyHostToDevice));
      fft_->spectrum_transposed(d_k.data(), spectrum_.data() + fft_->spectrum_elements() * k);
      GPUCONV_CUDA(cudaDeviceSynchronize());
    }
  }

  // plan_options::autotune: times every fused tile that holds the kernel and the model's
  // multi-pass tiling on this problem's shape (one warm-up, the best of three runs on a
  // scratch image) and keeps the fastest. Skipped, keeping the model's choice, when the
  // scratch image and its output do not fit the memory cap beside the largest workspace.
  void autotune() {
    const std::size_t io = std::size_t(prob.input_elements() + prob.output_elements()) * 4;
    if (io > cap_ / 2) return;
    device_buffer<float> in(prob.input_elements()), out(prob.output_elements());
    GPUCONV_CUDA(cudaMemsetAsync(in.data(), 0x3F, in.bytes(), stream_));  // 0.747 everywhere
    std::vector<cuda_tiling> candidates;
    auto add = [&](cuda_path path, int tile) {
      candidates.push_back(choose_cuda_tiling(prob.geo.out_h, prob.geo.out_w, prob.output_planes(), prob.kh, prob.kw, path, tile, sms_));
    };
    const int side = std::max(prob.kh, prob.kw);
    for (int t = 32; t <= 128; t *= 2)
      if (t >= side) add(cuda_path::fused, t);
    // the three-pass tiles up to the first that holds the whole output (larger ones only add padding)
    for (int t = 256; t <= 1024; t *= 2)
      if (t >= side) {
        add(cuda_path::three_pass, t);
        if (t - side + 1 >= std::max(prob.geo.out_h, prob.geo.out_w)) break;
      }
    add(cuda_path::multipass, 0);
    cuda_event start, stop;
    float best_ms = 0;
    const cuda_tiling* best = nullptr;
    for (const auto& c : candidates) {
      try {
        configure(c);
      } catch (const std::invalid_argument&) {
        continue;  // does not fit the memory cap
      }
      run(in.data(), out.data(), pixel::f32, prob.map, stream_);
      float ms = 0;
      for (int rep = 0; rep < 3; ++rep) {
        GPUCONV_CUDA(cudaEventRecord(start, stream_));
        run(in.data(), out.data(), pixel::f32, prob.map, stream_);
        GPUCONV_CUDA(cudaEventRecord(stop, stream_));
        const float t = stop.elapsed_since(start);
        ms = rep == 0 ? t : std::min(ms, t);
      }
      if (!best || ms < best_ms) {
        best_ms = ms;
        best = &c;
      }
    }
    if (best) configure(*best);
  }

  static std::size_t align_up(std::size_t b) { return (b + 255) / 256 * 256; }

  void ensure_staging() {
    if (staging_.size() == 0) staging_ = device_buffer<char>(staging_bytes_ + 512);
  }

  // Every tile of map m: one fused launch, or the multi-pass pipeline kernel by kernel of
  // the bank (its chunks share one spectrum), in chunks of the workspace.
  void run(const void* in, void* out, pixel p, const tile_map& map, cudaStream_t stream) {
    dispatch_pixel(p, [&](auto type) {
      using T = decltype(type);
      const T* src = static_cast<const T*>(in);
      T* dst = static_cast<T*>(out);
      const tile_map m = map_for<T>(map);
      if (fused_) {
        fused_->run(src, dst, m, stream);
        return;
      }
      if (three_) {
        three_->run(src, dst, m, stream);
        return;
      }
      for (int k = 0; k < m.kernels; ++k) {
        const cf* spectrum = spectrum_.data() + fft_->spectrum_elements() * k;
        const long long end = (k + 1) * m.tiles_per_kernel;
        for (long long first = k * m.tiles_per_kernel; first < end; first += chunk_) {
          const long long count = std::min(chunk_, end - first);
          gather_kernel<<<grid_for(chunk_ * m.tile_h * m.tile_w), 256, 0, stream>>>(src, tiles_.data(), m, first, chunk_, end);
          check_launch("gather_kernel");
          fft_->convolve(tiles_.data(), tiles_.data(), spectrum, stream);
          scatter_kernel<<<grid_for(count * m.valid_h * m.valid_w), 256, 0, stream>>>(tiles_.data(), dst, m, first, count, end);
          check_launch("scatter_kernel");
        }
      }
    });
  }

  // Bands of output rows, plane by plane (see the top of this file).
  void execute_in_bands(const char* in, char* out, pixel p) {
    const std::size_t bytes = pixel_bytes(p);
    const tile_map& m = prob.map;
    const long long W = prob.width, H = prob.height, ow = m.out_w, oh = m.out_h, kc = m.kernels;
    // rows of output a band holds: (rows + kh - 1) input rows and `rows` output rows per
    // kernel of the bank, a whole number of tile rows when there is room for one
    const long long per_row = (W + kc * ow) * (long long)bytes;
    long long rows = ((long long)staging_bytes_ / (long long)bytes - (m.kh - 1) * W) / (W + kc * ow);
    if (rows >= m.valid_h) rows = rows / m.valid_h * m.valid_h;
    rows = std::min(rows, oh);
    if (rows < 1)
      throw std::invalid_argument("conv::plan: the memory cap leaves " + std::to_string(staging_bytes_) +
                                  " bytes of staging, less than one band of " + std::to_string(per_row) + " bytes");
    ensure_staging();
    char* d_in = staging_.data();
    char* d_out = d_in + align_up(std::size_t(rows + m.kh - 1) * W * bytes);
    // a row of the outside value (zero or constant boundary), in the pixel type
    std::vector<char> outside_row(std::size_t(W) * bytes);
    const std::vector<float> outside(W, m.border == boundary::constant ? m.constant_value : 0.f);
    from_float(outside.data(), outside.size(), p, outside_row.data());
    for (int plane = 0; plane < prob.planes; ++plane) {
      const char* src = in + std::size_t(plane) * H * W * bytes;
      char* dst = out + std::size_t(plane) * kc * oh * ow * bytes;  // its kc output planes
      for (long long y0 = 0; y0 < oh; y0 += rows) {
        const long long band = std::min(rows, oh - y0), in_rows = band + m.kh - 1;
        const long long first = y0 + m.oy - (m.kh - 1);  // input row of band row 0
        // runs of consecutive source rows become one copy each
        for (long long i = 0; i < in_rows;) {
          const int r = border_index(first + i, (int)H, m.border);
          long long n = 1;
          if (r >= 0)
            while (i + n < in_rows && border_index(first + i + n, (int)H, m.border) == r + n) ++n;
          const void* from = r >= 0 ? static_cast<const void*>(src + std::size_t(r) * W * bytes) : outside_row.data();
          if (r < 0) n = 1;
          GPUCONV_CUDA(cudaMemcpyAsync(d_in + std::size_t(i) * W * bytes, from, std::size_t(n) * W * bytes,
                                       cudaMemcpyHostToDevice, stream_));
          i += n;
        }
        tile_map b = m;
        b.height = in_rows;
        b.out_h = band;
        b.oy = m.kh - 1;  // 'valid' along y: every row the band reads is in the uploaded block
        const long long tiles_y = (band + m.valid_h - 1) / m.valid_h;
        b.tiles_per_plane = b.tiles_per_kernel = tiles_y * m.tiles_x;  // one input plane
        run(d_in, d_out, p, b, stream_);
        for (long long k = 0; k < kc; ++k)  // the band's output plane k: rows y0.. of output plane k
          GPUCONV_CUDA(cudaMemcpyAsync(dst + std::size_t(k * oh + y0) * ow * bytes, d_out + std::size_t(k * band) * ow * bytes,
                                       std::size_t(band) * ow * bytes, cudaMemcpyDeviceToHost, stream_));
        GPUCONV_CUDA(cudaStreamSynchronize(stream_));  // the staging is reused by the next band
      }
    }
  }

  unsigned grid_for(long long work) const { return (unsigned)std::min<long long>((work + 255) / 256, max_grid_); }

  unsigned max_grid_ = 1;
  int sms_ = 1;
  std::size_t cap_ = 0;  // the memory cap: plan_options::memory_limit or half the free memory
  long long chunk_ = 1;
  std::size_t staging_bytes_ = 0;
  std::size_t l2_bytes_ = 0;  // the L2 the three-pass chunks are sized by (0: not)
  cuda_path path_ = cuda_path::multipass;
  std::unique_ptr<fused_tiles> fused_;
  std::unique_ptr<three_pass_tiles> three_;
  std::unique_ptr<fft::real_2d_plan> fft_;
  device_buffer<float> tiles_;
  device_buffer<cf> spectrum_;
  device_buffer<char> staging_;
  cuda_stream stream_;
};

}  // namespace

std::unique_ptr<plan::impl> make_cuda_backend(problem p) { return std::make_unique<cuda_backend>(std::move(p)); }

}  // namespace gpuconv::conv
