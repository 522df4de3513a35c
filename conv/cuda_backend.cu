// CUDA backend. Five methods, chosen at plan time by the cost model (method.hpp:
// choose_cuda_method; the FFT paths' tiles by tiling.hpp):
// - direct (direct.hpp): a shared-memory tile per block, the taps summed term by term, the
//   image read once and the output written once;
// - separable (separable.hpp): rank-1 kernels as a row pass into a float intermediate and a
//   column pass, in chunks of planes whose intermediate fits the workspace;
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
// execute() on host buffers streams the image through the device in units (whole planes,
// several at a time, or bands of one plane's output rows when a plane is large) with up to
// three units in flight: while the CPU copies unit u from the caller's pageable buffer into
// page-locked staging (parallel_copy on the CPU pool's threads), unit u-1 crosses PCIe, unit u-2 is
// convolved and unit u-3 comes back; H2D, compute and D2H each have a stream, ordered by
// events. A band's input rows (with the rows the kernel reaches beyond it, mapped by the
// boundary rule on the host) form an image of their own, convolved with 'valid' geometry
// along y and the plan's along x; bands are whole tile rows, so every tile but a band's last
// holds the same samples as in one call over the whole image (the last one's rows past the
// band differ: float rounding, not the function, changes). Caller buffers that are already page-locked (cudaHostAlloc,
// cudaHostRegister) are copied to and from directly. Units also keep the device staging
// within the memory cap when the image does not fit it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "backend.hpp"
#include "device_scope.hpp"
#include "host_copy.hpp"
#include "host_staging.hpp"
#include "fft/device/buffer.hpp"
#include "fft/plan/real_2d_plan.hpp"
#include "direct.hpp"
#include "fused.hpp"
#include "separable.hpp"
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

// plan_options::cuda_device: the backend's first member, so that every CUDA object of the
// plan (streams, events, buffers, kernel attributes) is made on that device; it puts the
// caller's device back when the constructor ends (done()) and after the members are gone.
class device_binding {
 public:
  explicit device_binding(int requested) {
    GPUCONV_CUDA(cudaGetDevice(&caller_));
    device_ = requested >= 0 ? requested : caller_;
    if (device_ != caller_) GPUCONV_CUDA(cudaSetDevice(device_));
  }
  void done() const {
    if (device_ != caller_) cudaSetDevice(caller_);
  }
  // at the start of the owner's destructor: its members are released on the plan's device
  void enter_for_destruction() {
    if (cudaGetDevice(&caller_) != cudaSuccess) caller_ = device_;
    if (device_ != caller_) cudaSetDevice(device_);
  }
  ~device_binding() { done(); }
  int device() const { return device_; }

 private:
  int caller_ = 0, device_ = 0;
};

class cuda_backend final : public plan::impl {
 public:
  explicit cuda_backend(problem p) : impl(std::move(p)), binding_(prob.options.cuda_device) {
    try {
      build();
    } catch (...) {
      binding_.done();
      throw;
    }
    binding_.done();
  }
  ~cuda_backend() override { binding_.enter_for_destruction(); }

 private:
  void build() {
    const int device = binding_.device();
    int sms = 0;
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
    const cuda_choice chosen = choose(o.path, o.tile);
    try {
      configure(chosen);
    } catch (const std::invalid_argument&) {
      // a separable intermediate (two passes, kernels past 32 taps) that the memory cap cannot
      // hold: an automatic plan takes the FFT paths' best instead
      if (o.path != cuda_path::automatic || chosen.path != cuda_path::separable) throw;
      const cuda_tiling f = choose_cuda_tiling(prob.geo.out_h, prob.geo.out_w, prob.output_planes(), prob.kh, prob.kw,
                                               cuda_path::automatic, o.tile, sms_, by_rule());
      configure({f.path, f.tiles, {}, f.cost_ps});
    }
    if (o.autotune && o.path == cuda_path::automatic && o.tile == 0) autotune();
  }

 public:
  backend kind() const override { return backend::cuda; }
  cuda_path path() const override { return path_; }

  void execute_device(const void* in, void* out, pixel p, cudaStream_t stream) override {
    device_scope on(binding_.device());
    run(in, out, p, prob.map, stream);
  }

  void execute(const void* in, void* out, pixel p) override {
    device_scope on(binding_.device());
    execute_host(static_cast<const char*>(in), static_cast<char*>(out), p);
  }

 private:
  // the boundary rule reads the image past its edges (the cost model's fused price)
  bool by_rule() const { return boundary_reads_image(prob.options.semantics.border); }

  cuda_choice choose(cuda_path path, int tile) const {
    return choose_cuda_method(prob.kernel, prob.kernels, prob.kh, prob.kw, prob.geo.out_h, prob.geo.out_w, prob.planes,
                              path, tile, sms_, by_rule());
  }

  // Sets up the method and tiling of `choice`: the direct path's taps, the separable path's
  // factors and intermediate, the fused kernel's spectra, the three-pass path's spectra and
  // chunk, or the multi-pass plan, workspace and spectra, within the memory cap.
  void configure(const cuda_choice& choice) {
    prob.set_tiling(choice.tiles);
    path_ = choice.path;
    direct_.reset();
    separable_.reset();
    fused_.reset();
    three_.reset();
    fft_.reset();
    tiles_ = device_buffer<float>();
    spectrum_ = device_buffer<cf>();
    // Staging for execute() on host buffers: at most what the image and its output need at 4
    // bytes a pixel (the widest type) twice over (the units' halo rows), at most the cap on the
    // fused path (no workspace) and half of it on the others, whose workspace takes the rest.
    const std::size_t io_bytes = std::size_t(prob.input_elements() + prob.output_elements()) * 4;
    // no workspace: the one-pass kernels (separable kernels up to 32 taps share a tile)
    const bool one_pass = choice.path == cuda_path::fused || choice.path == cuda_path::direct ||
                          (choice.path == cuda_path::separable &&
                           separable_tiles::in_one_kernel(choice.factors, prob.kernels, prob.kh, prob.kw,
                                                          prob.geo.out_h, prob.geo.out_w));
    staging_bytes_ = std::min(2 * io_bytes, one_pass ? cap_ : cap_ / 2);
    const std::size_t work_cap = cap_ > staging_bytes_ ? cap_ - staging_bytes_ : 0;
    if (choice.path == cuda_path::fused) {
      fused_ = std::make_unique<fused_tiles>(prob.tiles.tile_h, prob.kernel, prob.kernels, prob.kh, prob.kw);
      return;
    }
    if (choice.path == cuda_path::direct) {
      direct_ = std::make_unique<direct_tiles>(prob.kernel, prob.kernels, prob.kh, prob.kw);
      return;
    }
    if (choice.path == cuda_path::separable) {
      separable_ = std::make_unique<separable_tiles>(choice.factors, prob.kernels, prob.kh, prob.kw, prob.geo.out_h,
                                                     prob.geo.out_w, sms_);
      if (one_pass) {
        separable_chunk_ = prob.planes;
        return;
      }
      // the intermediate for as many planes as the workspace holds (a band of a plane needs
      // less than the plane)
      const long long per_plane = separable_tiles::intermediate_per_plane(prob.map) * 4;
      if ((long long)work_cap < per_plane)
        throw std::invalid_argument("conv::plan: the memory cap (" + std::to_string(cap_) +
                                    " bytes) is below the separable path's intermediate for one plane");
      separable_chunk_ = std::clamp<long long>((long long)work_cap / per_plane, 1, prob.planes);
      tiles_ = device_buffer<float>(std::size_t(separable_chunk_) * per_plane / 4);
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
      upload(d_k.data(), tile.data(), d_k.bytes());
      fft_->spectrum_transposed(d_k.data(), spectrum_.data() + fft_->spectrum_elements() * k);
      GPUCONV_CUDA(cudaDeviceSynchronize());
    }
  }

  // plan_options::autotune: times direct (up to max_cuda_direct_taps), separable
  // (when the kernel is rank-1), every fused and three-pass tile that holds the kernel and the
  // model's multi-pass tiling on this problem's shape (one warm-up, the best of three runs on
  // a scratch image of plan_options::pixels) and keeps the fastest. Skipped, keeping the model's
  // choice, when the scratch image and its output do not fit the memory cap beside the largest
  // workspace.
  void autotune() {
    const pixel px = prob.options.pixels;
    const std::size_t bytes = pixel_bytes(px);
    const std::size_t io = std::size_t(prob.input_elements() + prob.output_elements()) * bytes;
    if (io > cap_ / 2) return;
    device_buffer<unsigned char> in(prob.input_elements() * bytes), out(prob.output_elements() * bytes);
    GPUCONV_CUDA(cudaMemsetAsync(in.data(), 0x3F, in.bytes(), stream_));  // 0.747 everywhere (float), 63 / 16191
    std::vector<cuda_choice> candidates;
    auto add = [&](cuda_path path, int tile) {
      try {
        candidates.push_back(choose(path, tile));
      } catch (const std::invalid_argument&) {
        // the method cannot hold this kernel
      }
    };
    if ((long long)prob.kh * prob.kw <= max_cuda_direct_taps) add(cuda_path::direct, 0);  // (accuracy: method.hpp)
    add(cuda_path::separable, 0);
    const int side = std::max(prob.kh, prob.kw);
    for (const int t : fused_tile_sides)
      if (t >= side && fused_side_in_use(t)) add(cuda_path::fused, t);
    // the three-pass tiles up to the first that holds the whole output (larger ones only add padding)
    for (int t = 256; t <= 1024; t *= 2)
      if (t >= side) {
        add(cuda_path::three_pass, t);
        if (t - side + 1 >= std::max(prob.geo.out_h, prob.geo.out_w)) break;
      }
    add(cuda_path::multipass, 0);
    cuda_event start, stop;
    float best_ms = 0;
    const cuda_choice* best = nullptr;
    for (const auto& c : candidates) {
      try {
        configure(c);
      } catch (const std::invalid_argument&) {
        continue;  // does not fit the memory cap
      }
      run(in.data(), out.data(), px, prob.map, stream_);
      float ms = 0;
      for (int rep = 0; rep < 3; ++rep) {
        GPUCONV_CUDA(cudaEventRecord(start, stream_));
        run(in.data(), out.data(), px, prob.map, stream_);
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

  // Every tile of map m: one fused launch, or the multi-pass pipeline kernel by kernel of
  // the bank (its chunks share one spectrum), in chunks of the workspace.
  void run(const void* in, void* out, pixel p, const tile_map& map, cudaStream_t stream) {
    dispatch_pixel(p, [&](auto type) {
      using T = decltype(type);
      const T* src = static_cast<const T*>(in);
      T* dst = static_cast<T*>(out);
      const tile_map m = map_for<T>(map);
      if (direct_) {
        direct_->run(src, dst, m, stream);
        return;
      }
      if (separable_) {
        separable_->run(src, dst, m, tiles_.data(), separable_chunk_, stream);
        return;
      }
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

  // How execute() on host buffers cuts the work (see the top of this file).
  struct host_layout {
    bool whole = true;      // units of whole planes; else bands of one plane's output rows
    long long planes = 1;   // whole: planes per unit
    long long rows = 0;     // bands: output rows per band (a multiple of valid_h when >= it)
    long long units = 1;
    int slots = 1;          // units in flight
    std::size_t in_bytes = 0, out_bytes = 0;  // one slot's input and output
  };

  static constexpr std::size_t min_unit_bytes = std::size_t(512) << 10;
  // The staging copies of a unit are one parallel_copy job, and a job costs ~0.2 ms beyond its
  // bytes (waking the pool's parked workers): on the H200 host, 3x3000x4000 fp32 from pageable
  // buffers took 49-68% of the PCIe floor with 16 (18 units) and 69-79% with 32 (9 units;
  // GPUCONV_HOST_STATS, docs/benchmarks.md, session 48). GPUCONV_HOST_UNIT_MB (measurements).
  static std::size_t max_unit_bytes() {
    static const std::size_t b = [] {
      const char* e = std::getenv("GPUCONV_HOST_UNIT_MB");
      return std::size_t(e && std::atoi(e) > 0 ? std::atoi(e) : 32) << 20;
    }();
    return b;
  }

  host_layout layout_for(std::size_t bytes) const {
    const tile_map& m = prob.map;
    const long long W = prob.width, H = prob.height, ow = m.out_w, oh = m.out_h, kc = m.kernels, P = prob.planes;
    const std::size_t plane_in = std::size_t(H * W) * bytes, plane_out = std::size_t(kc * oh * ow) * bytes;
    const std::size_t total = std::size_t(P) * (plane_in + plane_out);
    host_layout L;
    if (total <= 2 * min_unit_bytes && total <= staging_bytes_) {  // small: one unit
      L.planes = P;
      L.in_bytes = P * plane_in;
      L.out_bytes = P * plane_out;
      return L;
    }
    const std::size_t target = std::clamp(total / 8, min_unit_bytes, max_unit_bytes());
    for (int slots = 3; slots >= 1; --slots) {
      const std::size_t per_slot = slots > 1 ? std::min(target, staging_bytes_ / slots) : staging_bytes_;
      L.slots = slots;
      if (plane_in + plane_out <= per_slot) {
        L.whole = true;
        L.planes = std::clamp<long long>((long long)(per_slot / (plane_in + plane_out)), 1, P);
        L.units = (P + L.planes - 1) / L.planes;
        L.in_bytes = L.planes * plane_in;
        L.out_bytes = L.planes * plane_out;
      } else {
        const long long room = (long long)(per_slot / bytes) - (m.kh - 1) * W;
        long long rows = room > 0 ? room / (W + kc * ow) : 0;
        if (rows >= m.valid_h) rows = rows / m.valid_h * m.valid_h;
        rows = std::min(rows, oh);
        if (rows < 1) continue;
        L.whole = false;
        L.rows = rows;
        L.units = P * ((oh + rows - 1) / rows);
        L.in_bytes = std::size_t((rows + m.kh - 1) * W) * bytes;
        L.out_bytes = std::size_t(kc * rows * ow) * bytes;
      }
      L.slots = (int)std::min<long long>(slots, L.units);
      return L;
    }
    throw std::invalid_argument("conv::plan: the memory cap leaves " + std::to_string(staging_bytes_) +
                                " bytes of staging, less than one band of " +
                                std::to_string((W + kc * ow) * (long long)bytes) + " bytes a row");
  }

  // See the top of this file.
  void execute_host(const char* in, char* out, pixel p) {
    const std::size_t bytes = pixel_bytes(p);
    const host_layout L = layout_for(bytes);
    const tile_map& m = prob.map;
    const long long W = prob.width, H = prob.height, ow = m.out_w, oh = m.out_h, kc = m.kernels;
    const std::size_t plane_in = std::size_t(H * W) * bytes, plane_out = std::size_t(kc * oh * ow) * bytes;
    const long long bands = L.whole ? 1 : (oh + L.rows - 1) / L.rows;
    // page-locked caller buffers are copied directly. (Registering pageable ones for the call,
    // cudaHostRegister + cudaHostUnregister, costs ~11 ms per 144 MB on the H100 machine:
    // twice the PCIe time of the bytes.)
    const bool direct = host_staging::page_locked(in) && host_staging::page_locked(out);

    const std::size_t slot_bytes = align_up(L.in_bytes) + align_up(L.out_bytes);
    staging_.reserve(L.slots * slot_bytes);
    if (!direct) {
      pinned_in_.reserve(L.slots * align_up(L.in_bytes));
      pinned_out_.reserve(L.slots * align_up(L.out_bytes));
    }
    const int copiers = staging_threads(prob.options.threads);
    // a row of the outside value (zero or constant boundary), in the pixel type, page-locked
    if (!L.whole && (m.border == boundary::zero || m.border == boundary::constant)) {
      const std::vector<float> outside(W, m.border == boundary::constant ? m.constant_value : 0.f);
      from_float(outside.data(), outside.size(), p, outside_row_.reserve(std::size_t(W) * bytes));
    }
    auto d_in = [&](int s) { return staging_.data() + s * slot_bytes; };
    auto d_out = [&](int s) { return staging_.data() + s * slot_bytes + align_up(L.in_bytes); };
    auto h_in = [&](int s) { return static_cast<char*>(pinned_in_.data()) + s * align_up(L.in_bytes); };
    auto h_out = [&](int s) { return static_cast<char*>(pinned_out_.data()) + s * align_up(L.out_bytes); };

    struct unit {
      long long plane, planes, y0, rows;  // planes [plane, plane + planes), output rows [y0, y0 + rows)
    };
    auto unit_at = [&](long long u) {
      if (L.whole) return unit{u * L.planes, std::min(L.planes, prob.planes - u * L.planes), 0, oh};
      const long long y0 = (u % bands) * L.rows;
      return unit{u / bands, 1, y0, std::min(L.rows, oh - y0)};
    };
    // where a unit's input comes from (dst offsets within the slot) and its output goes
    std::vector<copy_segment> segs;  // appended to by input_segments and output_segments
    auto input_segments = [&](const unit& w, char* base) {
      if (L.whole) {
        segs.push_back({base, in + w.plane * plane_in, std::size_t(w.planes) * plane_in});
        return;
      }
      const char* src = in + w.plane * plane_in;
      const long long in_rows = w.rows + m.kh - 1, first = w.y0 + m.oy - (m.kh - 1);  // input row of band row 0
      for (long long i = 0; i < in_rows;) {  // runs of consecutive source rows: one segment each
        const int r = border_index(first + i, (int)H, m.border);
        long long n = 1;
        if (r >= 0)
          while (i + n < in_rows && border_index(first + i + n, (int)H, m.border) == r + n) ++n;
        const char* from = r >= 0 ? src + std::size_t(r) * W * bytes : static_cast<const char*>(outside_row_.data());
        segs.push_back({base + std::size_t(i) * W * bytes, from, std::size_t(n) * W * bytes});
        i += n;
      }
    };
    auto output_segments = [&](const unit& w, const char* base) {
      if (L.whole) {
        segs.push_back({out + w.plane * plane_out, base, std::size_t(w.planes) * plane_out});
        return;
      }
      for (long long k = 0; k < kc; ++k)  // the band's output plane k: rows y0.. of output plane k
        segs.push_back({out + w.plane * plane_out + std::size_t(k * oh + w.y0) * ow * bytes,
                        base + std::size_t(k * w.rows) * ow * bytes, std::size_t(w.rows) * ow * bytes});
    };
    auto unit_map = [&](const unit& w) {
      tile_map b = m;
      if (L.whole) {
        b.tiles_per_kernel = w.planes * m.tiles_per_plane;
        return b;
      }
      b.height = w.rows + m.kh - 1;
      b.out_h = w.rows;
      b.oy = m.kh - 1;  // 'valid' along y: every row the band reads is in the uploaded block
      b.tiles_per_plane = b.tiles_per_kernel = (w.rows + m.valid_h - 1) / m.valid_h * m.tiles_x;  // one input plane
      return b;
    };
    auto unit_in_bytes = [&](const unit& w) {
      return L.whole ? std::size_t(w.planes) * plane_in : std::size_t((w.rows + m.kh - 1) * W) * bytes;
    };
    auto unit_out_bytes = [&](const unit& w) {
      return L.whole ? std::size_t(w.planes) * plane_out : std::size_t(kc * w.rows * ow) * bytes;
    };
    // GPUCONV_HOST_STATS=1 (measurements): where the call's host time went, one line a call
    static const bool stats = std::getenv("GPUCONV_HOST_STATS") != nullptr;
    using sclock = std::chrono::steady_clock;
    double t_wait = 0, t_copy = 0, t_bytes = 0;
    long long n_segs = 0;
    const auto t_start = sclock::now();
    auto since = [](sclock::time_point a) { return std::chrono::duration<double, std::milli>(sclock::now() - a).count(); };
    auto drain_segments = [&](long long u) {  // unit u's output, once downloaded into its slot
      const int s = int(u % L.slots);
      const auto a = sclock::now();
      GPUCONV_CUDA(cudaEventSynchronize(downloaded_[s]));
      t_wait += since(a);
      output_segments(unit_at(u), h_out(s));
    };
    auto copy_segments = [&] {  // segs, between the caller's buffers and the page-locked slots
      const auto a = sclock::now();
      parallel_copy(copiers, segs, staging_bytes_per_thread);
      if (!stats) return;
      t_copy += since(a);
      n_segs += (long long)segs.size();
      for (const copy_segment& g : segs) t_bytes += double(g.bytes);
    };

    for (long long u = 0; u < L.units; ++u) {
      const int s = int(u % L.slots);
      const unit w = unit_at(u);
      segs.clear();
      if (!direct && u >= L.slots) drain_segments(u - L.slots);  // frees slot s
      // upload, after the previous unit of this slot has been convolved
      GPUCONV_CUDA(cudaStreamWaitEvent(upload_, convolved_[s], 0));
      if (direct) {
        input_segments(w, d_in(s));
        for (const copy_segment& g : segs)
          GPUCONV_CUDA(cudaMemcpyAsync(g.dst, g.src, g.bytes, cudaMemcpyHostToDevice, upload_));
      } else {
        input_segments(w, h_in(s));
        copy_segments();  // the previous unit's output and this unit's input in one job
        GPUCONV_CUDA(cudaMemcpyAsync(d_in(s), h_in(s), unit_in_bytes(w), cudaMemcpyHostToDevice, upload_));
      }
      GPUCONV_CUDA(cudaEventRecord(uploaded_[s], upload_));
      // convolve, once the input is up and the slot's previous output has been downloaded
      GPUCONV_CUDA(cudaStreamWaitEvent(stream_, uploaded_[s], 0));
      GPUCONV_CUDA(cudaStreamWaitEvent(stream_, downloaded_[s], 0));
      run(d_in(s), d_out(s), p, unit_map(w), stream_);
      GPUCONV_CUDA(cudaEventRecord(convolved_[s], stream_));
      // download
      GPUCONV_CUDA(cudaStreamWaitEvent(download_, convolved_[s], 0));
      if (direct) {
        segs.clear();
        output_segments(w, d_out(s));
        for (const copy_segment& g : segs)
          GPUCONV_CUDA(cudaMemcpyAsync(g.dst, g.src, g.bytes, cudaMemcpyDeviceToHost, download_));
      } else {
        GPUCONV_CUDA(cudaMemcpyAsync(h_out(s), d_out(s), unit_out_bytes(w), cudaMemcpyDeviceToHost, download_));
      }
      GPUCONV_CUDA(cudaEventRecord(downloaded_[s], download_));
    }
    if (direct) {
      GPUCONV_CUDA(cudaStreamSynchronize(download_));
      return;
    }
    for (long long u = std::max(0LL, L.units - L.slots); u < L.units; ++u) {
      segs.clear();
      drain_segments(u);
      copy_segments();
    }
    if (stats)
      std::fprintf(stderr, "host-stats units %lld slots %d in %zu out %zu copiers %d: total %.2f wait %.2f copy %.2f ms, %.1f MB in %lld segments (%.1f GB/s)\n",
                   L.units, L.slots, L.in_bytes, L.out_bytes, copiers, since(t_start), t_wait, t_copy,
                   t_bytes / 1e6, n_segs, t_bytes / (t_copy * 1e6));
  }

  unsigned grid_for(long long work) const { return (unsigned)std::min<long long>((work + 255) / 256, max_grid_); }

  device_binding binding_;  // first: made before, and released after, every CUDA object below
  unsigned max_grid_ = 1;
  int sms_ = 1;
  std::size_t cap_ = 0;  // the memory cap: plan_options::memory_limit or half the free memory
  long long chunk_ = 1;
  long long separable_chunk_ = 1;  // planes per separable chunk (tiles_ holds their intermediate)
  std::size_t staging_bytes_ = 0;
  std::size_t l2_bytes_ = 0;  // the L2 the three-pass chunks are sized by (0: not)
  cuda_path path_ = cuda_path::multipass;
  std::unique_ptr<direct_tiles> direct_;
  std::unique_ptr<separable_tiles> separable_;
  std::unique_ptr<fused_tiles> fused_;
  std::unique_ptr<three_pass_tiles> three_;
  std::unique_ptr<fft::real_2d_plan> fft_;
  device_buffer<float> tiles_;
  device_buffer<cf> spectrum_;
  device_buffer<char> staging_;     // execute() on host buffers: the units' device slots
  pinned_buffer pinned_in_, pinned_out_, outside_row_;
  cuda_stream stream_, upload_, download_;
  cuda_event uploaded_[3] = {cuda_event(cudaEventDisableTiming), cuda_event(cudaEventDisableTiming), cuda_event(cudaEventDisableTiming)};
  cuda_event convolved_[3] = {cuda_event(cudaEventDisableTiming), cuda_event(cudaEventDisableTiming), cuda_event(cudaEventDisableTiming)};
  cuda_event downloaded_[3] = {cuda_event(cudaEventDisableTiming), cuda_event(cudaEventDisableTiming), cuda_event(cudaEventDisableTiming)};
};

}  // namespace

std::unique_ptr<plan::impl> make_cuda_backend(problem p) { return std::make_unique<cuda_backend>(std::move(p)); }

}  // namespace gpuconv::conv
