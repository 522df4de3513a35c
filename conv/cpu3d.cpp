// plan3d's CPU backend for kernels that are not rank-1 (those take the separable method,
// separable3d.cpp, unless a method is forced). Two methods:
// - direct: the formula of semantics3d.hpp as kd*kh rows of taps per output row
//   (cpu_rows.hpp's taps_rows over the kd*kh extended source rows, the kernel seen as a
//   (kd*kh) x kw bank of rows); one output slice per unit of work, units over the CPU pool;
// - fft: 3D overlap-save tiles (tile_map3d.hpp) through the host 3D FFT
//   (fft/host/real_3d_host.hpp) in float, one tile per unit of work, one workspace per thread.
// automatic: direct while its multiply-adds (output voxels x kernel voxels) stay under ~16
// times the FFT's estimated work, else fft. Neither is tuned; the CPU backend is the
// correct fallback and the CI's path, not a fast one.
#include <algorithm>
#include <cmath>
#include <thread>

#include "backend3d.hpp"
#include "cpu_rows.hpp"
#include "fft/host/real_3d_host.hpp"

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
      std::vector<float> ext((std::size_t)(taps * stride));
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

using cf = fft::complex_t<float>;

class cpu3d_fft final : public plan3d::impl {
 public:
  explicit cpu3d_fft(problem3d p)
      : impl(std::move(p)), fft_(prob.tiles.tile_d, prob.tiles.tile_h, prob.tiles.tile_w), spectrum_(fft_.complex_elements()) {
    const auto tile = prob.kernel_tile();
    fft_.forward(tile.data(), spectrum_.data());
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
      std::vector<float> tile((std::size_t)prob.tiles.tile_voxels());
      std::vector<cf> spec((std::size_t)fft_.complex_elements());
      for (long long g = next++; g < total; g = next++) {
        const auto at = m.locate(g);
        const long long z0 = at.z0, y0 = at.y0, x0 = at.x0;
        // gather: tile row (u, v) is source row (z0 + u + oz - (kd-1), y0 + v + oy - (kh-1)) extended along x
        for (int u = 0; u < m.tile_d; ++u) {
          const int s = border_index(z0 + u + m.oz - (m.kd - 1), (int)m.depth, b);
          for (int v = 0; v < m.tile_h; ++v) {
            const int r = border_index(y0 + v + m.oy - (m.kh - 1), (int)m.height, b);
            const T* src = (s < 0 || r < 0) ? nullptr : in + ((at.volume * m.depth + s) * m.height + r) * m.width;
            extend_row(src, m.width, x0 + m.ox - (m.kw - 1), m.tile_w, b, outside,
                       tile.data() + ((std::size_t)u * m.tile_h + v) * m.tile_w);
          }
        }
        fft_.forward(tile.data(), spec.data());
        for (std::size_t i = 0; i < spec.size(); ++i) spec[i] = spec[i] * spectrum_[i];
        fft_.inverse_destroying(spec.data(), tile.data());
        // scatter the valid block
        const long long depth = std::min<long long>(m.valid_d, m.out_d - z0), rows = std::min<long long>(m.valid_h, m.out_h - y0),
                        cols = std::min<long long>(m.valid_w, m.out_w - x0);
        for (long long a = 0; a < depth; ++a)
          for (long long c = 0; c < rows; ++c)
            store_row(tile.data() + ((std::size_t)(a + m.kd - 1) * m.tile_h + (c + m.kh - 1)) * m.tile_w + (m.kw - 1), cols,
                      out + ((at.volume * m.out_d + z0 + a) * m.out_h + y0 + c) * m.out_w + x0);
      }
    };
    run_on_threads((int)std::max<long long>(1, std::min<long long>(cpu_threads(prob), total)), worker);
  }

  fft::host::real_3d_plan<float> fft_;
  std::vector<cf> spectrum_;
};

// The direct method's multiply-adds against the FFT's estimated work (tiles x voxels x
// (log2 voxels + 8)), the direct one given a 16x handicap for its vectorised inner loop.
bool direct_is_cheaper(const problem3d& p) {
  const double direct = double(p.volumes) * double(p.output_voxels()) * p.kd * p.kh * p.kw;
  const double v = double(p.tiles.tile_voxels());
  const double fft = double(p.volumes) * double(p.tiles.tiles_per_volume()) * v * (std::log2(v) + 8) * 16;
  return direct <= fft;
}

}  // namespace

std::unique_ptr<plan3d::impl> make_cpu3d_backend(problem3d p) {
  // the CPU's tiles: at most 64 per side (a tile and its spectrum per thread stay in L2-L3)
  if (p.options.tile == 0)
    p.tiles = choose_tiling3d(p.geo.out_d, p.geo.out_h, p.geo.out_w, p.kd, p.kh, p.kw, 0, 64);
  const cpu_method m = p.options.cpu;
  if (m == cpu_method::direct || (m != cpu_method::fft && direct_is_cheaper(p)))
    return std::make_unique<cpu3d_direct>(std::move(p));
  return std::make_unique<cpu3d_fft>(std::move(p));
}

}  // namespace gpuconv::conv
