// plan3d's CUDA backend: 3D overlap-save tiles (rank-1 kernels take the separable method
// instead, separable3d.cu, unless a path or tile is forced).
//
// Tiles whose slices are squares of 32, 64, 128 or 160 take the slice path (slices3d.hpp: three
// passes over complex tile pairs, chunks of pairs) unless plan_options::path is multipass;
// the others go through fft::real_3d_plan. Per chunk of tiles (as many as the workspace cap
// holds): gather (gather3d_kernel: the boundary rule applied while loading each tile voxel,
// narrow pixels widened), the 3D convolve of the FFT plan (row R2C, C2C along H, one kernel
// along D doing FFT * spectrum * IFFT, C2C back along H, row C2R), scatter of each tile's
// valid block (rounded and saturated for narrow types). The kernel's tile spectrum is
// computed once, here.
//
// execute() on host buffers: when the volumes, their outputs and the workspace fit the
// memory cap, one upload, every tile, one download. Otherwise bands: per volume, runs of
// whole tile layers along D; a band's slab of extended input slices (backend3d.hpp's
// make_band: the boundary rule along D applied on the host, the outside value filled in) is
// uploaded, convolved, and its output slices downloaded. Pageable host bytes cross through
// page-locked staging (host_staging.hpp: CPU copies and DMA overlapped chunk by chunk); the
// upload, the tiles and the download follow each other (the 2D plan's pipeline also overlaps
// compute with copies).
#include <algorithm>
#include <string>

#include "backend3d.hpp"
#include "device_scope.hpp"
#include "fft/device/buffer.hpp"
#include "fft/plan/dispatch.hpp"
#include "fft/plan/real_3d_plan.hpp"
#include "host_staging.hpp"
#include "pixel.cuh"
#include "slices3d.hpp"

namespace gpuconv::conv {

namespace {

using cf = fft::complex_t<float>;

struct gather3d_policy {
  static constexpr int block_threads = 256;
  static constexpr int items_per_thread = 16;  // voxels per thread per tile (a block covers 4096)
};

// The map a call on pixels of type T runs with: the constant saturated to the type first
// (backend.hpp's map_for, for the 3D map).
template <typename T>
tile_map3d map3d_for(tile_map3d m) {
  if constexpr (!std::is_same_v<T, float>) m.constant_value = float(saturate_round<T>(m.constant_value));
  return m;
}

// blockIdx.y: the tile (first + blockIdx.y); the block's threads stride over its voxels.
template <typename in_t>
__global__ void __launch_bounds__(gather3d_policy::block_threads)
gather3d_kernel(const in_t* __restrict__ in, float* __restrict__ tiles, tile_map3d m, long long first, long long total,
                int log_h, int log_w) {
  const long long g = first + blockIdx.y;
  const long long voxels = (long long)m.tile_d << (log_h + log_w);
  float* tile = tiles + (long long)blockIdx.y * voxels;
  const bool inside = g < total;
  const tile_map3d::tile_at at = m.locate(inside ? g : 0);
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < voxels; e += (long long)gridDim.x * blockDim.x) {
    const int u = (int)(e >> (log_h + log_w)), v = (int)(e >> log_w) & (m.tile_h - 1), w = (int)e & (m.tile_w - 1);
    tile[e] = inside ? m.gather_at(in, at, u, v, w) : 0.f;
  }
}

template <typename out_t>
__global__ void __launch_bounds__(gather3d_policy::block_threads)
scatter3d_kernel(const float* __restrict__ tiles, out_t* __restrict__ out, tile_map3d m, long long first,
                 long long total, int log_h, int log_w) {
  const long long g = first + blockIdx.y;
  if (g >= total) return;
  const tile_map3d::tile_at at = m.locate(g);
  const float* tile = tiles + ((long long)blockIdx.y * m.tile_d << (log_h + log_w));
  const int vh = m.valid_h, vw = m.valid_w;
  const long long count = (long long)m.valid_d * vh * vw;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count; e += (long long)gridDim.x * blockDim.x) {
    const int a = (int)(e / (vh * vw)), r = (int)(e - (long long)a * vh * vw), b = r / vw, c = r - b * vw;
    const long long o = m.output_index_at(at, a, b, c);
    if (o >= 0)
      out[o] = store_pixel<out_t>(
          tile[((((long long)(a + m.kd - 1) << log_h) + (b + m.kh - 1)) << log_w) + (c + m.kw - 1)]);
  }
}

class cuda3d_backend final : public plan3d::impl {
 public:
  explicit cuda3d_backend(problem3d p) : impl(std::move(p)) {
    GPUCONV_CUDA(cudaGetDevice(&device_));
    if (prob.options.cuda_device >= 0) device_ = prob.options.cuda_device;
    device_scope on(device_);
    const tiling3d& t = prob.tiles;
    std::size_t free_bytes = 0, total_bytes = 0;
    GPUCONV_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    cap_ = prob.options.memory_limit ? prob.options.memory_limit : free_bytes / 2;
    const long long total = prob.volumes * prob.whole_map().tiles_per_volume();
    const std::size_t work_cap = cap_ / 2;
    const std::string tiles = std::to_string(t.tile_d) + " x " + std::to_string(t.tile_h) + " x " + std::to_string(t.tile_w);
    // a chunk's unit (a tile, or the slice path's tile pair) must fit half the cap
    auto check_cap = [&](long long unit_bytes, const char* unit) {
      if ((long long)work_cap < unit_bytes)
        throw std::invalid_argument("conv::plan3d: the memory cap (" + std::to_string(cap_) + " bytes) is below twice one " +
                                    tiles + " " + unit + "'s workspace (" + std::to_string(unit_bytes) + " bytes)");
    };
    if (prob.options.path == cuda_path::fused && !slice_tiles3d::supports(t))
      throw std::invalid_argument("conv::plan3d: the slice path (path fused) needs square slices of 32, 64, 128 or 160 and a "
                                  "tile depth of 16..256 or " + fft::mixed_lengths_text() + "; the tiles are " + tiles);
    if (slice_tiles3d::supports(t) && prob.options.path != cuda_path::multipass) {
      const long long per_pair = slice_tiles3d::pair_bytes(t), pairs = (total + 1) / 2;
      check_cap(per_pair, "tile pair");
      chunk_ = std::clamp<long long>((long long)(work_cap / per_pair), 1, pairs);
      slices_ = std::make_unique<slice_tiles3d>(t, prob.kernel, prob.kd, prob.kh, prob.kw);
      work_ = device_buffer<cf>(std::size_t(chunk_ * t.tile_voxels()));
      workspace_bytes_ = work_.bytes() + std::size_t(t.tile_voxels()) * sizeof(cf);
      return;
    }
    // per tile: the real tile and the FFT plan's complex workspace
    const long long per_tile = t.tile_voxels() * 4 + (long long)t.tile_d * t.tile_h * (t.tile_w / 2 + 1) * 8;
    check_cap(per_tile, "tile");
    chunk_ = std::clamp<long long>((long long)(work_cap / per_tile), 1, std::min<long long>(total, 65535));
    fft_ = std::make_unique<fft::real_3d_plan>(t.tile_d, t.tile_h, t.tile_w, chunk_);
    tiles_ = device_buffer<float>(std::size_t(chunk_ * t.tile_voxels()));
    spectrum_ = device_buffer<cf>(std::size_t(fft_->spectrum_elements()));
    {
      fft::real_3d_plan one(t.tile_d, t.tile_h, t.tile_w, 1);
      const auto k = prob.kernel_tile();
      device_buffer<float> d_k(k.size());
      upload(d_k.data(), k.data(), d_k.bytes());
      one.forward(d_k.data(), spectrum_.data());
      GPUCONV_CUDA(cudaDeviceSynchronize());
    }
    workspace_bytes_ = fft_->workspace_bytes() + tiles_.bytes() + spectrum_.bytes();
  }

  backend kind() const override { return backend::cuda; }
  cuda_path path() const override { return slices_ ? cuda_path::fused : cuda_path::multipass; }

  void execute_device(const void* in, void* out, pixel px, cudaStream_t stream) override {
    device_scope on(device_);
    run(in, out, px, prob.whole_map(), prob.volumes, stream);
  }

  void execute(const void* in, void* out, pixel px) override {
    device_scope on(device_);
    const std::size_t bytes = pixel_bytes(px);
    const std::size_t in_bytes = std::size_t(prob.volumes * prob.input_voxels()) * bytes;
    const std::size_t out_bytes = std::size_t(prob.volumes * prob.output_voxels()) * bytes;
    const std::size_t room = cap_ > workspace_bytes_ ? cap_ - workspace_bytes_ : 0;
    if (in_bytes + out_bytes <= room) {
      d_in_.reserve(in_bytes);
      d_out_.reserve(out_bytes);
      staging().upload(d_in_.data(), in, in_bytes, nullptr);
      run(d_in_.data(), d_out_.data(), px, prob.whole_map(), prob.volumes, nullptr);
      staging().download(out, d_out_.data(), out_bytes, nullptr);
      return;
    }
    execute_bands(static_cast<const char*>(in), static_cast<char*>(out), px, room);
  }

 private:
  // Bands of `layers` tile layers: the slab (layers * valid_d + kd - 1 slices) and the output
  // slices (layers * valid_d) within `room` bytes; at least one layer.
  void execute_bands(const char* in, char* out, pixel px, std::size_t room) {
    const std::size_t bytes = pixel_bytes(px);
    const std::size_t in_slice = std::size_t(prob.height * prob.width) * bytes;
    const std::size_t out_slice = std::size_t(prob.geo.out_h * prob.geo.out_w) * bytes;
    const long long vd = prob.tiles.valid_d;
    const long long fit = ((long long)room / (long long)(in_slice + out_slice) - (prob.kd - 1)) / vd;
    const long long layers = std::clamp<long long>(fit, 1, (prob.geo.out_d + vd - 1) / vd);
    const long long band = layers * vd;
    d_in_.reserve((band + prob.kd - 1) * in_slice);
    d_out_.reserve(band * out_slice);
    // one slice of the outside value (zero/constant boundaries), in the pixel type
    std::vector<char> outside(in_slice);
    dispatch_pixel(px, [&](auto type) {
      using T = decltype(type);
      const T v = T(map3d_for<T>(prob.whole_map()).constant_value);
      const T fill = prob.options.semantics.border == boundary::zero ? T(0) : v;
      std::fill(reinterpret_cast<T*>(outside.data()), reinterpret_cast<T*>(outside.data()) + prob.height * prob.width, fill);
    });
    for (int vol = 0; vol < prob.volumes; ++vol)
      for (long long z0 = 0; z0 < prob.geo.out_d; z0 += band) {
        const long long z1 = std::min(prob.geo.out_d, z0 + band);
        const band3d b = make_band(prob, z0, z1);
        std::vector<host_transfer> slab;
        for (std::size_t j = 0; j < b.slices.size(); ++j) {
          const char* src = b.slices[j] < 0 ? outside.data()
                                            : in + (std::size_t(vol) * prob.depth + b.slices[j]) * in_slice;
          slab.push_back({d_in_.data() + j * in_slice, src, in_slice});
        }
        staging().upload(slab, nullptr);
        run(d_in_.data(), d_out_.data(), px, b.map, 1, nullptr);
        staging().download(out + (std::size_t(vol) * prob.geo.out_d + z0) * out_slice, d_out_.data(),
                           std::size_t(z1 - z0) * out_slice, nullptr);
      }
  }

  // Every tile of `volumes` volumes under map m, chunk by chunk.
  void run(const void* in, void* out, pixel px, const tile_map3d& map, int volumes, cudaStream_t stream) {
    const tiling3d& t = prob.tiles;
    const int log_h = fft::log2_exact(t.tile_h), log_w = fft::log2_exact(t.tile_w);
    const long long total = volumes * map.tiles_per_volume();
    const unsigned gather_x = (unsigned)std::max<long long>(
        1, t.tile_voxels() / (gather3d_policy::block_threads * gather3d_policy::items_per_thread));
    const long long valid = (long long)t.valid_d * t.valid_h * t.valid_w;
    const unsigned scatter_x = (unsigned)std::max<long long>(
        1, (valid + gather3d_policy::block_threads * gather3d_policy::items_per_thread - 1) /
               (gather3d_policy::block_threads * gather3d_policy::items_per_thread));
    if (slices_) {
      const long long pairs = (total + 1) / 2;
      dispatch_pixel(px, [&](auto type) {
        using T = decltype(type);
        for (long long first = 0; first < pairs; first += chunk_)
          slices_->run<T>(static_cast<const T*>(in), static_cast<T*>(out), map3d_for<T>(map), total, first,
                          std::min(chunk_, pairs - first), work_.data(), stream);
      });
      return;
    }
    dispatch_pixel(px, [&](auto type) {
      using T = decltype(type);
      const tile_map3d m = map3d_for<T>(map);
      const T* src = static_cast<const T*>(in);
      T* dst = static_cast<T*>(out);
      for (long long first = 0; first < total; first += chunk_) {
        const unsigned count = (unsigned)std::min(chunk_, total - first);
        gather3d_kernel<T><<<dim3(gather_x, (unsigned)chunk_), gather3d_policy::block_threads, 0, stream>>>(
            src, tiles_.data(), m, first, total, log_h, log_w);
        check_launch("gather3d_kernel");
        fft_->convolve(tiles_.data(), tiles_.data(), spectrum_.data(), stream);
        scatter3d_kernel<T><<<dim3(scatter_x, count), gather3d_policy::block_threads, 0, stream>>>(
            tiles_.data(), dst, m, first, total, log_h, log_w);
        check_launch("scatter3d_kernel");
      }
    });
  }

  int device_ = 0;
  std::size_t cap_ = 0, workspace_bytes_ = 0;
  long long chunk_ = 1;  // tiles a chunk (the slice path: tile pairs)
  std::unique_ptr<slice_tiles3d> slices_;  // the slice path (slices3d.hpp), where the tiles allow it
  device_buffer<cf> work_;                 // its chunk of complex tile pairs
  std::unique_ptr<fft::real_3d_plan> fft_;
  device_buffer<float> tiles_;
  device_buffer<cf> spectrum_;
  device_buffer<char> d_in_, d_out_;  // execute()'s device copies of host buffers (grown on demand)
  lazy_host_staging staging{prob.options.threads};  // execute()'s page-locked staging
};

}  // namespace

std::unique_ptr<plan3d::impl> make_cuda3d_backend(problem3d p) { return std::make_unique<cuda3d_backend>(std::move(p)); }

}  // namespace gpuconv::conv
