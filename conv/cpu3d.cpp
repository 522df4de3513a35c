// plan3d's CPU backend for kernels that are not rank-1 (those take the separable method,
// separable3d.cpp, unless a method is forced). Two methods:
// - direct: the formula of semantics3d.hpp as kd*kh rows of taps per output row
//   (cpu_rows.hpp's taps_rows over the kd*kh extended source rows, the kernel seen as a
//   (kd*kh) x kw bank of rows); one output slice per unit of work, units over the CPU pool;
// - fft: 3D overlap-save tiles (tile_map3d.hpp) through a vectorised tile transform
//   (tile3d_fft below: the host 2D tile FFT per slice, then along D with the same per-ISA
//   loops) in float, one tile per unit of work, one workspace per thread.
// automatic: direct while its multiply-adds (output voxels x kernel voxels) stay under ~16
// times the FFT's estimated work, else fft. Neither is tuned; the CPU backend is the
// correct fallback and the CI's path, not a fast one.
#include <algorithm>
#include <cmath>
#include <thread>

#include "backend3d.hpp"
#include "cpu_rows.hpp"
#include "fft/host/real_2d_tile.hpp"

namespace gpuconv::conv {

namespace {

class cpu3d_direct final : public plan3d::impl {
 public:
  explicit cpu3d_direct(problem3d p) : impl(std::move(p)) {}
  backend kind() const override { return backend::cpu; }
  cpu_method method() const override { return cpu_method::direct; }
  void execute(const void* in, void* out, pixel px) override {
    with_pixels(in, out, px, [&](auto* i, auto* o) { run(i, o, px); });
  }

 private:
  template <typename T>
  void run(const T* in, T* out, pixel px) const {
    const problem3d& p = prob;
    const geometry3d& g = p.geo;
    const boundary b = p.options.semantics.border;
    const float outside = outside_value3d(p.options.semantics, px);
    const int taps = p.kd * p.kh;
    const long long span = g.out_w + p.kw - 1, first = g.ox - (p.kw - 1);
    const long long stride = ring_stride(span);
    parallel_units(cpu_threads(p), p.volumes * g.out_d, [&](long long unit) {
      const long long v = unit / g.out_d, z = unit % g.out_d;
      line_vector<float> ext((std::size_t)(taps * stride));
      std::vector<const float*> rows(taps);
      for (long long y = 0; y < g.out_h; ++y) {
        for (int l = 0; l < p.kd; ++l) {
          const int s = border_index(z + g.oz - l, (int)p.depth, b);
          for (int i = 0; i < p.kh; ++i) {
            const int r = border_index(y + g.oy - i, (int)p.height, b);
            const T* src = (s < 0 || r < 0) ? nullptr : in + ((v * p.depth + s) * p.height + r) * p.width;
            float* row = ext.data() + (std::size_t)(l * p.kh + i) * stride;
            extend_row(src, p.width, first, span, b, outside, row);
            rows[l * p.kh + i] = row;
          }
        }
        taps_rows(rows.data(), p.kernel.data(), taps, p.kw, g.out_w, out + ((v * g.out_d + z) * g.out_h + y) * g.out_w);
      }
    });
  }
};

// The FFT method's 3D tile transform, vectorised: each slice through the host 2D tile FFT
// (fft/host/real_2d_tile.hpp: transforms vectorised across 16 columns, per-ISA loops), the
// slices' spectra stacked as rows of one [tile_d][plane] split-complex block, then the
// transform along D down those rows with the same per-ISA loop (every value of a slice's
// spectrum a lane). Inverse: along D, then the 2D inverse of the valid slices only (the
// first kd - 1 would wrap). Unnormalised (the kernel's spectrum carries 1 / tile voxels).
class tile3d_fft {
 public:
  using tile_plan = fft::host::real_2d_tile_plan;
  explicit tile3d_fft(const tiling3d& t)
      : td_(t.tile_d), slices_(t.tile_h, t.tile_w), plane_(slices_.spectrum_floats()), k_(fft::host::best_tile_kernels()) {
    fft::host::split_twiddle_table(2 * td_, d_re_, d_im_);  // W_{2 td}^e, the loop's table for td points
  }

  // One thread's buffers: the 2D workspace and the stacked spectra with their scratch.
  struct workspace {
    tile_plan::workspace slice;
    line_vector<float> re, im, scratch_re, scratch_im;
  };
  workspace make_workspace() const {
    const std::size_t n = (std::size_t)td_ * plane_;
    return {slices_.make_workspace(), line_vector<float>(n), line_vector<float>(n), line_vector<float>(n),
            line_vector<float>(n)};
  }
  long long spectrum_floats() const { return (long long)td_ * plane_; }

  // Tile row v of the slice being filled or read, in the 2D plan's packed layout (even rows
  // in z_re, odd rows in z_im).
  float* row(workspace& ws, int v) const {
    return (v & 1 ? ws.slice.z_im.data() : ws.slice.z_re.data()) + (std::size_t)(v >> 1) * slices_.tile_w();
  }

  // fill(u) writes slice u's rows through row(ws, v); then ws.re/im hold the tile's spectrum.
  template <typename Fill>
  void forward(workspace& ws, Fill&& fill) const {
    for (int u = 0; u < td_; ++u) {
      fill(u);
      slices_.forward(ws.slice);
      std::copy(ws.slice.s_re.begin(), ws.slice.s_re.end(), ws.re.begin() + (std::size_t)u * plane_);
      std::copy(ws.slice.s_im.begin(), ws.slice.s_im.end(), ws.im.begin() + (std::size_t)u * plane_);
    }
    k_.passes(ws.re.data(), ws.im.data(), ws.scratch_re.data(), ws.scratch_im.data(), td_, (int)plane_, d_re_.data(),
              d_im_.data(), false);
  }

  void multiply(workspace& ws, const line_vector<float>& re, const line_vector<float>& im) const {
    k_.multiply(ws.re.data(), ws.im.data(), re.data(), im.data(), spectrum_floats());
  }

  // The inverse along D, then for u in [first, last) the slice's 2D inverse and use(u), which
  // reads its rows through row(ws, v).
  template <typename Use>
  void inverse(workspace& ws, int first, int last, Use&& use) const {
    k_.passes(ws.re.data(), ws.im.data(), ws.scratch_re.data(), ws.scratch_im.data(), td_, (int)plane_, d_re_.data(),
              d_im_.data(), true);
    for (int u = first; u < last; ++u) {
      std::copy(ws.re.begin() + (std::size_t)u * plane_, ws.re.begin() + (std::size_t)(u + 1) * plane_, ws.slice.s_re.begin());
      std::copy(ws.im.begin() + (std::size_t)u * plane_, ws.im.begin() + (std::size_t)(u + 1) * plane_, ws.slice.s_im.begin());
      slices_.inverse(ws.slice);
      use(u);
    }
  }

 private:
  int td_;
  tile_plan slices_;
  long long plane_;  // floats of one slice's spectrum plane (tile_w x lanes)
  const fft::host::tile_kernels& k_;
  line_vector<float> d_re_, d_im_;
};

class cpu3d_fft final : public plan3d::impl {
 public:
  explicit cpu3d_fft(problem3d p) : impl(std::move(p)), fft_(prob.tiles) {
    // the kernel's spectrum, in the tile transform's layout
    auto ws = fft_.make_workspace();
    const auto tile = prob.kernel_tile();
    const tiling3d& t = prob.tiles;
    fft_.forward(ws, [&](int u) {
      for (int v = 0; v < t.tile_h; ++v) {
        const float* src = tile.data() + ((std::size_t)u * t.tile_h + v) * t.tile_w;
        std::copy(src, src + t.tile_w, fft_.row(ws, v));
      }
    });
    spectrum_re_ = std::move(ws.re);
    spectrum_im_ = std::move(ws.im);
  }
  backend kind() const override { return backend::cpu; }
  cpu_method method() const override { return cpu_method::fft; }
  void execute(const void* in, void* out, pixel px) override {
    with_pixels(in, out, px, [&](auto* i, auto* o) { run(i, o, px); });
  }

 private:
  template <typename T>
  void run(const T* in, T* out, pixel px) const {
    const tile_map3d m = prob.whole_map();
    const boundary b = m.border;
    const float outside = outside_value3d(prob.options.semantics, px);
    const long long total = prob.volumes * m.tiles_per_volume();
    std::atomic<long long> next{0};
    auto worker = [&] {
      auto ws = fft_.make_workspace();
      for (long long g = next++; g < total; g = next++) {
        const auto at = m.locate(g);
        const long long z0 = at.z0, y0 = at.y0, x0 = at.x0;
        // gather: tile row (u, v) is source row (z0 + u + oz - (kd-1), y0 + v + oy - (kh-1)) extended along x
        fft_.forward(ws, [&](int u) {
          const int s = border_index(z0 + u + m.oz - (m.kd - 1), (int)m.depth, b);
          for (int v = 0; v < m.tile_h; ++v) {
            const int r = border_index(y0 + v + m.oy - (m.kh - 1), (int)m.height, b);
            const T* src = (s < 0 || r < 0) ? nullptr : in + ((at.volume * m.depth + s) * m.height + r) * m.width;
            extend_row(src, m.width, x0 + m.ox - (m.kw - 1), m.tile_w, b, outside, fft_.row(ws, v));
          }
        });
        fft_.multiply(ws, spectrum_re_, spectrum_im_);
        // scatter the valid block: slices kd - 1 .. of the tile
        const long long depth = std::min<long long>(m.valid_d, m.out_d - z0), rows = std::min<long long>(m.valid_h, m.out_h - y0),
                        cols = std::min<long long>(m.valid_w, m.out_w - x0);
        fft_.inverse(ws, m.kd - 1, (int)(m.kd - 1 + depth), [&](int u) {
          const long long a = u - (m.kd - 1);
          for (long long c = 0; c < rows; ++c)
            store_row(fft_.row(ws, (int)c + m.kh - 1) + (m.kw - 1), cols,
                      out + ((at.volume * m.out_d + z0 + a) * m.out_h + y0 + c) * m.out_w + x0);
        });
      }
    };
    run_on_threads((int)std::max<long long>(1, std::min<long long>(cpu_threads(prob), total)), worker);
  }

  tile3d_fft fft_;
  line_vector<float> spectrum_re_, spectrum_im_;
};

// The direct method's multiply-adds against the FFT's estimated work (tiles x voxels x
// (log2 voxels + 8)), the direct one given a 6x handicap for its vectorised inner loop
// (fitted on the 2-core Zen 5 VM, session 33: with the vectorised tile transform the two
// cross between K = 7 and 9 on 32 x 128^2, 64 x 256^2 and 16 x 512^2; 16 before it).
bool direct_is_cheaper(const problem3d& p) {
  const double direct = double(p.volumes) * double(p.output_voxels()) * p.kd * p.kh * p.kw;
  const double v = double(p.tiles.tile_voxels());
  const double fft = double(p.volumes) * double(p.tiles.tiles_per_volume()) * v * (std::log2(v) + 8) * 6;
  return direct <= fft;
}

// The method make_cpu3d_backend takes: direct when forced, or automatic and cheaper.
bool takes_direct(const problem3d& p) {
  const cpu_method m = p.options.cpu;
  return m == cpu_method::direct || (m != cpu_method::fft && direct_is_cheaper(p));
}

// A thread's time per unit of the work counts above (a direct multiply-add / 6, or a tile voxel x
// (log2 voxels + 8)) with 16 threads busy on the H100 host (16 vCPUs): 0.50-0.95 ns over 12
// stacks of 32 x 256^2 .. 256 x 512^2 with 15^3 and 31^3 PSFs (session 35,
// docs/benchmarks.md), the work counted in rounds of `threads` units; plus the kernel's
// spectrum (15-40 ms).
constexpr double cpu3d_ns_per_unit = 0.75;
constexpr double cpu3d_fft_setup_s = 0.02;

}  // namespace

double cpu3d_seconds(const problem3d& p, int threads) {
  threads = std::max(1, threads);
  auto rounds = [&](long long units) { return double((units + threads - 1) / threads); };
  if (takes_direct(p)) {  // one output slice a unit of work
    const double slice = double(p.geo.out_h) * double(p.geo.out_w) * p.kd * p.kh * p.kw / 6;
    return rounds((long long)p.volumes * p.geo.out_d) * slice * cpu3d_ns_per_unit * 1e-9;
  }
  const double v = double(p.tiles.tile_voxels());
  return rounds((long long)p.volumes * p.tiles.tiles_per_volume()) * v * (std::log2(v) + 8) * cpu3d_ns_per_unit * 1e-9 +
         cpu3d_fft_setup_s;
}

std::unique_ptr<plan3d::impl> make_cpu3d_backend(problem3d p) {
  // p.tiles: at most cpu_max_tile_side_3d a side (plan3d.cpp)
  if (takes_direct(p)) return std::make_unique<cpu3d_direct>(std::move(p));
  return std::make_unique<cpu3d_fft>(std::move(p));
}

}  // namespace gpuconv::conv
