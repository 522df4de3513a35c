// CUDA backend: tiles in chunks that fit the workspace cap. Per chunk: gather (boundary
// rule applied in the loader, no padded copy of the image) -> fft::real_2d_plan::convolve
// (row R2C, transpose, fused column FFT * spectrum * IFFT, transpose, row C2R) -> scatter
// of the valid outputs. The kernel spectrum is computed once, at plan time.
#include <algorithm>

#include "backend.hpp"
#include "fft/device/buffer.hpp"
#include "fft/plan/real_2d_plan.hpp"

namespace gpuconv::conv {

namespace {

using cf = fft::complex_t<float>;

__global__ void gather_kernel(const float* __restrict__ in, float* __restrict__ tiles, tile_map m,
                              long long first, long long count, long long total) {
  const long long per_tile = (long long)m.tile_h * m.tile_w;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count * per_tile;
       i += (long long)gridDim.x * blockDim.x) {
    const long long local = i / per_tile, g = first + local;
    const int e = (int)(i - local * per_tile), u = e / m.tile_w, v = e - u * m.tile_w;
    tiles[i] = g < total ? m.gather(in, g, u, v) : 0.f;
  }
}

__global__ void scatter_kernel(const float* __restrict__ tiles, float* __restrict__ out, tile_map m,
                               long long first, long long count, long long total) {
  const long long per_tile = (long long)m.valid_h * m.valid_w;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count * per_tile;
       i += (long long)gridDim.x * blockDim.x) {
    const long long local = i / per_tile, g = first + local;
    if (g >= total) continue;
    const int e = (int)(i - local * per_tile), a = e / m.valid_w, b = e - a * m.valid_w;
    const long long o = m.output_index(g, a, b);
    if (o >= 0) out[o] = tiles[local * m.tile_h * m.tile_w + (long long)(a + m.kh - 1) * m.tile_w + (b + m.kw - 1)];
  }
}

unsigned grid_for(long long work) { return (unsigned)std::min<long long>((work + 255) / 256, 132LL * 16); }

class cuda_backend final : public plan::impl {
 public:
  explicit cuda_backend(problem p) : impl(std::move(p)) {
    const long long th = prob.tiles.tile_h, tw = prob.tiles.tile_w;
    // workspace per tile: the real tile and the 2D plan's two complex work buffers
    const long long per_tile = th * tw * 4 + 2 * th * (tw / 2 + 1) * 8;
    std::size_t free_bytes = 0, total_bytes = 0;
    GPUCONV_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t io_bytes = std::size_t(prob.input_elements() + prob.output_elements()) * 4;
    std::size_t cap = prob.options.memory_limit ? prob.options.memory_limit : free_bytes / 2;
    cap = cap > io_bytes ? cap - io_bytes : 0;
    chunk_ = std::clamp<long long>((long long)(cap / per_tile), 1, prob.total_tiles());
    fft_ = std::make_unique<fft::real_2d_plan>((int)th, (int)tw, chunk_);
    tiles_ = device_buffer<float>(std::size_t(chunk_) * th * tw);
    spectrum_ = device_buffer<cf>(fft_->spectrum_elements());
    const auto k = prob.kernel_tile();
    device_buffer<float> d_k(k.size());
    GPUCONV_CUDA(cudaMemcpy(d_k.data(), k.data(), d_k.bytes(), cudaMemcpyHostToDevice));
    fft_->spectrum_transposed(d_k.data(), spectrum_.data());
    GPUCONV_CUDA(cudaDeviceSynchronize());
    // staging for execute() on host buffers: allocated here, never in execute
    d_in_ = device_buffer<float>(prob.input_elements());
    d_out_ = device_buffer<float>(prob.output_elements());
  }

  backend kind() const override { return backend::cuda; }

  void execute_device(const float* in, float* out, cudaStream_t stream) override {
    const long long total = prob.total_tiles();
    const tile_map& m = prob.map;
    for (long long first = 0; first < total; first += chunk_) {
      const long long count = std::min(chunk_, total - first);
      gather_kernel<<<grid_for(chunk_ * m.tile_h * m.tile_w), 256, 0, stream>>>(in, tiles_.data(), m, first, chunk_, total);
      check_launch("gather_kernel");
      fft_->convolve(tiles_.data(), tiles_.data(), spectrum_.data(), stream);
      scatter_kernel<<<grid_for(count * m.valid_h * m.valid_w), 256, 0, stream>>>(tiles_.data(), out, m, first, count, total);
      check_launch("scatter_kernel");
    }
  }

  void execute(const float* in, float* out) override {
    GPUCONV_CUDA(cudaMemcpyAsync(d_in_.data(), in, d_in_.bytes(), cudaMemcpyHostToDevice, stream_));
    execute_device(d_in_.data(), d_out_.data(), stream_);
    GPUCONV_CUDA(cudaMemcpyAsync(out, d_out_.data(), d_out_.bytes(), cudaMemcpyDeviceToHost, stream_));
    GPUCONV_CUDA(cudaStreamSynchronize(stream_));
  }

 private:
  long long chunk_ = 1;
  std::unique_ptr<fft::real_2d_plan> fft_;
  device_buffer<float> tiles_, d_in_, d_out_;
  device_buffer<cf> spectrum_;
  cuda_stream stream_;
};

}  // namespace

std::unique_ptr<plan::impl> make_cuda_backend(problem p) { return std::make_unique<cuda_backend>(std::move(p)); }

}  // namespace gpuconv::conv
