#include "gpu_convolver.hpp"

#include "png_rows.hpp"

#include "conv/host_copy.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gpuconv::pipeline {

namespace {

// Staging chunks: the host copy into one half overlaps the DMA of the other.
constexpr std::size_t chunk_bytes = std::size_t(8) << 20;

// How the host side is copied (H100, 12 MP RGB, measured): uploads straight from the
// caller's pageable memory (the driver's own staging: 6 ms) beat ours (memcpy into pinned
// chunks, then DMA: 13-15 ms); downloads through our pinned chunks (27 ms) beat the driver's
// (32 ms) once the chunks exist, so a batch uses them (set_pinned_download); the one-image
// command downloads directly (allocating the chunks and releasing them at exit cost more).
// GPUCONV_STAGING=direct or pinned forces one way both ways, for measurements: 1 direct, 0
// pinned, -1 not set (uploads direct, downloads as set_pinned_download says).
int forced_staging() {
  static const int forced = [] {
    const char* e = std::getenv("GPUCONV_STAGING");
    return e && std::string(e) == "direct" ? 1 : e && std::string(e) == "pinned" ? 0 : -1;
  }();
  return forced;
}
bool direct_upload() { return forced_staging() != 0; }

}  // namespace

gpu_convolver::gpu_convolver(std::vector<float> kernel, int kh, int kw, const image_rules& rules,
                             std::size_t memory_limit)
    : rules_(rules), plans_(std::move(kernel), kh, kw, [&] {
        conv::plan_options o;
        o.semantics = rules.semantics;
        o.device = conv::backend::cuda;
        o.memory_limit = memory_limit;
        return o;
      }()),
      clipped_(1) {
  clipped_host_.reserve(sizeof(unsigned long long));
}

gpu_convolver::~gpu_convolver() = default;

void gpu_convolver::warm_up() {
  prefer_blocking_sync();
  GPUCONV_CUDA(cudaFree(nullptr));
}

void prefer_blocking_sync() {
  // Only before the context exists; later calls fail harmlessly (and clear their error).
  if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) (void)cudaGetLastError();
}

std::pair<long long, long long> gpu_convolver::output_size(long long h, long long w) const {
  const conv::geometry g = conv::make_geometry(h, w, plans_.kh(), plans_.kw(), rules_.semantics.mode);
  return {g.out_h, g.out_w};
}

void* gpu_convolver::input_buffer(std::size_t bytes) {
  input_.reserve(bytes);
  return input_.data();
}

void gpu_convolver::copy_up(unsigned char* device, const void* host, std::size_t bytes) {
  const auto* src = static_cast<const unsigned char*>(host);
  int k = 0;
  if (direct_upload()) GPUCONV_CUDA(cudaMemcpyAsync(device, src, bytes, cudaMemcpyHostToDevice, stream()));
  for (std::size_t offset = 0; !direct_upload() && offset < bytes; offset += chunk_bytes, k ^= 1) {
    const std::size_t n = std::min(chunk_bytes, bytes - offset);
    void* staging = staging_[k].reserve(chunk_bytes);
    GPUCONV_CUDA(cudaEventSynchronize(staged_[k]));  // its previous DMA is done
    conv::parallel_copy(copy_threads_, {{staging, src + offset, n}});
    GPUCONV_CUDA(cudaMemcpyAsync(device + offset, staging, n, cudaMemcpyHostToDevice, stream()));
    GPUCONV_CUDA(cudaEventRecord(staged_[k], stream()));
  }
}

stored_image gpu_convolver::upload(const void* host, sample type, int height, int width, int channels, layout at) {
  const std::size_t bytes = std::size_t(at.bytes_for(height, width, channels, type));
  unsigned char* device = static_cast<unsigned char*>(input_buffer(bytes));
  copy_up(device, host, bytes);
  return {device, type, height, width, channels, at};
}

stored_image gpu_convolver::upload_png(const void* scanlines, int height, int width, int channels, int depth) {
  const std::size_t bytes = std::size_t(png_scanline_bytes(height, width, channels, depth));
  scanlines_.reserve(bytes);
  copy_up(scanlines_.data(), scanlines, bytes);
  auto* device = static_cast<unsigned char*>(input_buffer(std::size_t(height) * width * channels * (depth / 8)));
  png_unsub_rows(scanlines_.data(), height, width, channels, depth, device, stream());
  return {device, depth == 16 ? sample::u16 : sample::u8, height, width, channels, layout::interleaved(width, channels)};
}

gpu_result gpu_convolver::run(const stored_image& in, sample out_type, layout out_at) {
  if (in.channels < 1 || in.channels > 4)
    throw std::invalid_argument("gpu_convolver: " + std::to_string(in.channels) + " channels (1 to 4)");
  const auto [out_h, out_w] = output_size(in.height, in.width);
  const int colour = in.colour();
  const bool keep = in.has_alpha() && rules_.alpha == alpha_rule::keep;
  const int planes = colour + (in.has_alpha() && !keep);
  const std::size_t in_area = std::size_t(in.height) * in.width, out_area = std::size_t(out_h) * out_w;
  planes_.reserve(in_area * planes);
  result_.reserve(out_area * planes);
  output_.reserve(std::size_t(out_at.bytes_for(out_h, out_w, in.channels, out_type)));

  load_planes(in, rules_.alpha, planes_.data(), stream());
  // Outside a 'constant' border every channel is V; premultiplied colour is then V * V / max,
  // so colour and alpha need plans with different outside values (as on the CPU path).
  const float v = rules_.semantics.constant_value;
  const bool split = rules_.semantics.border == conv::boundary::constant && in.has_alpha() &&
                     rules_.alpha == alpha_rule::premultiply;
  if (!split) {
    plans_.get(in.height, in.width, planes, v).execute_device(planes_.data(), result_.data(), stream());
  } else {
    const float colour_v = float(double(v) * v / alpha_max(in.type));
    plans_.get(in.height, in.width, colour, colour_v).execute_device(planes_.data(), result_.data(), stream());
    plans_.get(in.height, in.width, 1, v)
        .execute_device(planes_.data() + colour * in_area, result_.data() + colour * out_area, stream());
  }

  store_rules r;
  r.alpha = rules_.alpha;
  r.scale = rules_.scale;
  r.offset = rules_.offset;
  r.semantics = rules_.semantics;
  const conv::geometry g = conv::make_geometry(in.height, in.width, plans_.kh(), plans_.kw(), rules_.semantics.mode);
  r.shift_y = int(g.oy - (plans_.kh() - 1) / 2);
  r.shift_x = int(g.ox - (plans_.kw() - 1) / 2);
  GPUCONV_CUDA(cudaMemsetAsync(clipped_.data(), 0, sizeof(unsigned long long), stream()));
  store_planes(result_.data(), out_h, out_w, in, r, output_.data(), out_type, out_at, clipped_.data(), stream());
  auto* host_count = static_cast<unsigned long long*>(clipped_host_.data());
  GPUCONV_CUDA(cudaMemcpyAsync(host_count, clipped_.data(), sizeof *host_count, cudaMemcpyDeviceToHost, stream()));
  GPUCONV_CUDA(cudaStreamSynchronize(stream()));
  return {out_h, out_w, (long long)*host_count};
}

bool gpu_convolver::pinned_download() const { return forced_staging() == -1 ? pinned_download_ : forced_staging() == 0; }

void gpu_convolver::download(void* host, std::size_t bytes) { copy_down(host, output_.data(), bytes); }

void gpu_convolver::download_png(void* host, long long out_h, long long out_w, int channels, int depth) {
  const std::size_t bytes = std::size_t(png_scanline_bytes(out_h, out_w, channels, depth));
  scanlines_.reserve(bytes);
  png_sub_rows(output_.data(), out_h, out_w, channels, depth, scanlines_.data(), stream());
  copy_down(host, scanlines_.data(), bytes);
}

bool gpu_convolver::download_png_zlib(std::vector<unsigned char>& zlib, long long out_h, long long out_w, int channels,
                                      int depth) {
  const std::size_t bytes = std::size_t(png_scanline_bytes(out_h, out_w, channels, depth));
  if (bytes > gpu_deflate::max_input) return false;
  // the deflate's buffers (~16 bytes a byte) only where they take at most a quarter of the free
  // memory (a large image on a small GPU: the CPU's deflate, rather than a failed allocation)
  if (!deflate_ || deflate_->held_input() < bytes) {
    std::size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return false;
    if (gpu_deflate::device_bytes(bytes) > free_bytes / 4) return false;
  }
  scanlines_.reserve(bytes);
  png_sub_rows(output_.data(), out_h, out_w, channels, depth, scanlines_.data(), stream());
  if (!deflate_) deflate_ = std::make_unique<gpu_deflate>();
  return deflate_->run(scanlines_.data(), bytes, stream(), zlib,
                       [&](void* host, const unsigned char* device, std::size_t n) { copy_down(host, device, n); });
}

void gpu_convolver::copy_down(void* host, const unsigned char* device, std::size_t bytes) {
  auto* dst = static_cast<unsigned char*>(host);
  if (!pinned_download()) {
    GPUCONV_CUDA(cudaMemcpyAsync(dst, device, bytes, cudaMemcpyDeviceToHost, stream()));
    GPUCONV_CUDA(cudaStreamSynchronize(stream()));
    return;
  }
  // chunk k goes to staging k % 2; the host copy of chunk k - 1 runs while chunk k's DMA does
  std::size_t pending_offset = 0, pending_n = 0;
  int k = 0, pending_k = 0;
  for (std::size_t offset = 0; offset < bytes; offset += chunk_bytes, k ^= 1) {
    const std::size_t n = std::min(chunk_bytes, bytes - offset);
    void* staging = staging_[k].reserve(chunk_bytes);
    GPUCONV_CUDA(cudaMemcpyAsync(staging, device + offset, n, cudaMemcpyDeviceToHost, stream()));
    GPUCONV_CUDA(cudaEventRecord(staged_[k], stream()));
    if (pending_n) {
      GPUCONV_CUDA(cudaEventSynchronize(staged_[pending_k]));
      conv::parallel_copy(copy_threads_, {{dst + pending_offset, staging_[pending_k].data(), pending_n}});
    }
    pending_offset = offset;
    pending_n = n;
    pending_k = k;
  }
  if (pending_n) {
    GPUCONV_CUDA(cudaEventSynchronize(staged_[pending_k]));
    conv::parallel_copy(copy_threads_, {{dst + pending_offset, staging_[pending_k].data(), pending_n}});
  }
}

}  // namespace gpuconv::pipeline
