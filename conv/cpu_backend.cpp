// CPU backend: the method chosen by method.hpp (direct_cpu.cpp, separable_cpu.cpp, or the
// FFT method here). FFT: overlap-save tiles (tiling.hpp) spread over threads; per tile:
// gather (boundary rule, pixel type converted on the way in: cpu_rows.hpp's extend_row),
// 2D R2C (fft/host/real_2d_tile.hpp: transforms vectorised across columns, per-ISA loops),
// multiply by the kernel spectrum, C2R, scatter (rounded and saturated for narrow pixels).
// Threads: the CPU pool's (cpu_pool.hpp), one workspace each.
#include "cpu_rows.hpp"
#include "fft/host/real_2d_tile.hpp"

namespace gpuconv::conv {

namespace {

using tile_plan = fft::host::real_2d_tile_plan;

class cpu_fft final : public plan::impl {
 public:
  explicit cpu_fft(problem p) : impl(std::move(p)), fft_(prob.tiles.tile_h, prob.tiles.tile_w) {
    // the kernels' spectra, in the tile plan's spectrum layout
    auto ws = fft_.make_workspace();
    const int tw = fft_.tile_w();
    spectra_re_.resize(prob.kernels);
    spectra_im_.resize(prob.kernels);
    for (int k = 0; k < prob.kernels; ++k) {
      const auto tile = prob.kernel_tile(k);
      for (int u = 0; u < fft_.tile_h(); ++u)
        std::copy(tile.begin() + (std::size_t)u * tw, tile.begin() + (std::size_t)(u + 1) * tw, row(ws, u));
      fft_.forward(ws);
      spectra_re_[k] = ws.s_re;
      spectra_im_[k] = ws.s_im;
    }
  }

  backend kind() const override { return backend::cpu; }
  cpu_method method() const override { return cpu_method::fft; }

  void execute(const void* in, void* out, pixel px) override {
    with_pixels(in, out, px, [&](auto* i, auto* o) { run(i, o, px); });
  }

 private:
  // tile row u in the plan's packed layout: even rows in z_re, odd rows in z_im
  float* row(tile_plan::workspace& ws, int u) const {
    return (u & 1 ? ws.z_im.data() : ws.z_re.data()) + (std::size_t)(u >> 1) * fft_.tile_w();
  }

  template <typename T>
  void run(const T* in, T* out, pixel px) const {
    const tile_map& m = prob.map;
    const float outside = outside_value(prob, px);
    const long long total = prob.total_tiles();
    const int threads = (int)std::max<long long>(1, std::min<long long>(cpu_threads(prob), total));
    guided_units units(total, threads);
    auto tile = [&](long long g, tile_plan::workspace& ws) {
      const auto at = m.locate(g);
      const long long x_first = at.tx * m.valid_w + m.ox - (m.kw - 1), y_first = at.ty * m.valid_h + m.oy - (m.kh - 1);
      for (int u = 0; u < m.tile_h; ++u) {
        const int r = border_index(y_first + u, (int)m.height, m.border);
        extend_row(r < 0 ? nullptr : in + (at.plane * m.height + r) * m.width, m.width, x_first, m.tile_w, m.border,
                   outside, row(ws, u));
      }
      fft_.forward(ws);
      fft_.multiply(ws, spectra_re_[at.kernel].data(), spectra_im_[at.kernel].data());
      fft_.inverse(ws);
      const long long y0 = at.ty * m.valid_h, x0 = at.tx * m.valid_w;
      const long long rows = std::min<long long>(m.valid_h, m.out_h - y0), cols = std::min<long long>(m.valid_w, m.out_w - x0);
      for (long long a = 0; a < rows; ++a)
        store_row(row(ws, (int)a + m.kh - 1) + (m.kw - 1), cols,
                  out + ((at.plane * m.kernels + at.kernel) * m.out_h + y0 + a) * m.out_w + x0);
    };
    auto worker = [&] {
      auto ws = fft_.make_workspace();
      for (auto run = units.next(); run.first < run.second; run = units.next())
        for (long long g = run.first; g < run.second; ++g) tile(g, ws);
    };
    run_on_threads(threads, worker);
  }

  tile_plan fft_;
  std::vector<line_vector<float>> spectra_re_, spectra_im_;
};

}  // namespace

std::unique_ptr<plan::impl> make_cpu_backend(problem p) {
  cpu_choice c = choose_cpu_method(p.kernel, p.kernels, p.kh, p.kw, p.geo.out_h, p.geo.out_w, p.options.cpu,
                                   p.options.tile);
  switch (c.method) {
    case cpu_method::direct: return make_cpu_direct(std::move(p));
    case cpu_method::separable: return make_cpu_separable(std::move(p), std::move(c.factors));
    default: p.set_tiling(c.tiles); return std::make_unique<cpu_fft>(std::move(p));
  }
}

}  // namespace gpuconv::conv
