// The CPU backend's direct method (method.hpp): out(y, x) = sum k(i, j) in_ext(y + oy - i,
// x + ox - j) term by term in float, for small kernels where kh * kw multiply-adds per output
// cost less than a tile transform. Units of 32 output rows x 1024 columns (cpu_rows.hpp),
// whose extended source rows stay in the core's L2; a bank reuses them for every kernel.
#include "cpu_rows.hpp"

namespace gpuconv::conv {

namespace {

class cpu_direct final : public plan::impl {
 public:
  explicit cpu_direct(problem p) : impl(std::move(p)) {}

  backend kind() const override { return backend::cpu; }
  cpu_method method() const override { return cpu_method::direct; }

  void execute(const void* in, void* out, pixel px) override {
    with_pixels(in, out, px, [&](auto* i, auto* o) { run(i, o, px); });
  }

 private:
  template <typename T>
  void run(const T* in, T* out, pixel px) const {
    const problem& p = prob;
    const int kh = p.kh, kw = p.kw;
    const row_units units{p.map.out_h, p.map.out_w, 32, 1024};
    const float outside = outside_value(p, px);
    const boundary b = p.options.semantics.border;
    parallel_units(cpu_threads(p), p.planes * units.per_plane(), [&](long long u) {
      const auto [plane, y0, y1, x0, n] = units.at(u);
      const long long ext_w = n + kw - 1, ext_rows = (y1 - y0) + kh - 1;
      thread_local std::vector<float> ext;
      thread_local std::vector<const float*> rows, source;
      ext.resize((std::size_t)(ext_rows * ext_w));
      rows.resize(kh);
      source.resize((std::size_t)ext_rows);
      for (long long q = 0; q < ext_rows; ++q) {
        const int src = border_index(y0 + p.geo.oy - (kh - 1) + q, (int)p.height, b);
        source[q] = source_row(src < 0 ? nullptr : in + (plane * p.height + src) * p.width, p.width,
                               x0 + p.geo.ox - (kw - 1), ext_w, b, outside, ext.data() + q * ext_w);
      }
      for (int k = 0; k < p.kernels; ++k) {
        const float* kk = p.kernel.data() + (std::size_t)k * kh * kw;
        for (long long y = y0; y < y1; ++y) {
          for (int i = 0; i < kh; ++i) rows[i] = source[y - y0 + kh - 1 - i];
          T* o = out + ((plane * p.kernels + k) * p.map.out_h + y) * p.map.out_w + x0;
          taps_rows(rows.data(), kk, kh, kw, n, o);
        }
      }
    });
  }
};

}  // namespace

std::unique_ptr<plan::impl> make_cpu_direct(problem p) { return std::make_unique<cpu_direct>(std::move(p)); }

}  // namespace gpuconv::conv
