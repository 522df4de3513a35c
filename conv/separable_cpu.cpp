// The CPU backend's separable method (method.hpp): a rank-1 kernel k(i, j) = c(i) r(j) runs
// as a row pass (r over each extended source row) and a column pass (c over the filtered
// rows), kh + kw multiply-adds per output instead of kh * kw. Units of max(32, 2 kh) output
// rows x 512 columns (cpu_rows.hpp): the kh - 1 extra source rows a band needs are
// filtered once per band, and the band's filtered rows stay in the core's L2.
#include "cpu_rows.hpp"

namespace gpuconv::conv {

namespace {

class cpu_separable final : public plan::impl {
 public:
  cpu_separable(problem p, rank1_factors f) : impl(std::move(p)), f_(std::move(f)) {}

  backend kind() const override { return backend::cpu; }
  cpu_method method() const override { return cpu_method::separable; }

  void execute(const void* in, void* out, pixel px) override {
    with_pixels(in, out, px, [&](auto* i, auto* o) { run(i, o, px); });
  }

 private:
  template <typename T>
  void run(const T* in, T* out, pixel px) const {
    const problem& p = prob;
    const int kh = p.kh, kw = p.kw;
    const row_units units{p.map.out_h, p.map.out_w, std::max(32, 2 * kh), 512};
    const float outside = outside_value(p, px);
    const boundary b = p.options.semantics.border;
    parallel_units(cpu_threads(p), p.planes * units.per_plane(), [&](long long u) {
      const auto [plane, y0, y1, x0, n] = units.at(u);
      const long long ext_w = n + kw - 1, src_rows = (y1 - y0) + kh - 1;
      thread_local std::vector<float> ext, filtered, acc;
      thread_local std::vector<const float*> rows;
      ext.resize((std::size_t)ext_w);
      filtered.resize((std::size_t)(src_rows * n));
      acc.resize((std::size_t)n);
      rows.resize(kh);
      for (int k = 0; k < p.kernels; ++k) {
        const float* column = f_.column.data() + (std::size_t)k * kh;
        const float* row = f_.row.data() + (std::size_t)k * kw;
        for (long long q = 0; q < src_rows; ++q) {  // row pass
          const int src = border_index(y0 + p.geo.oy - (kh - 1) + q, (int)p.height, b);
          const float* e = source_row(src < 0 ? nullptr : in + (plane * p.height + src) * p.width, p.width,
                                      x0 + p.geo.ox - (kw - 1), ext_w, b, outside, ext.data());
          taps_rows(&e, row, 1, kw, n, filtered.data() + q * n);
        }
        for (long long y = y0; y < y1; ++y) {  // column pass
          for (int i = 0; i < kh; ++i) rows[i] = filtered.data() + (y - y0 + kh - 1 - i) * n;
          T* o = out + ((plane * p.kernels + k) * p.map.out_h + y) * p.map.out_w + x0;
          if constexpr (std::is_same_v<T, float>) {
            taps_rows(rows.data(), column, kh, 1, n, o);
          } else {
            taps_rows(rows.data(), column, kh, 1, n, acc.data());
            store_row(acc.data(), n, o);
          }
        }
      }
    });
  }

  rank1_factors f_;
};

}  // namespace

std::unique_ptr<plan::impl> make_cpu_separable(problem p, rank1_factors f) {
  return std::make_unique<cpu_separable>(std::move(p), std::move(f));
}

}  // namespace gpuconv::conv
