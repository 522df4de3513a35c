// plan3d's separable method on the CPU (separable3d.hpp): the three passes per volume over the
// CPU pool, one row of the pass's output per unit, each row through cpu_rows.hpp's taps_rows
// (the row pass on the extended source row, the column and slice passes as kh (kd) rows of
// one tap each, the rows picked by the boundary rule or a row of the outside value).
#include <memory>

#include "cpu_rows.hpp"
#include "separable3d.hpp"

namespace gpuconv::conv {

namespace {

class cpu3d_separable final : public plan3d::impl {
 public:
  cpu3d_separable(problem3d p, rank1_3d_factors f) : impl(std::move(p)), f_(std::move(f)) {}
  backend kind() const override { return backend::cpu; }
  cpu_method method() const override { return cpu_method::separable; }
  void execute(const void* in, void* out, pixel px) override {
    with_pixels(in, out, px, [&](auto* i, auto* o) { run(i, o, px); });
  }

 private:
  template <typename T>
  void run(const T* in, T* out, pixel px) const {
    const problem3d& p = prob;
    const geometry3d& g = p.geo;
    const boundary b = p.options.semantics.border;
    const separable3d_outside outside = separable3d_outside_values(p, f_, px);
    const int threads = cpu_threads(p);
    const long long D = p.depth, H = p.height, W = p.width;
    const long long span = g.out_w + p.kw - 1, first = g.ox - (p.kw - 1);
    // the intermediates, every value written before it is read (no zeroing pass)
    const std::unique_ptr<float[]> t1_buf(new float[std::size_t(D * H * g.out_w)]),
        t2_buf(new float[std::size_t(D * g.out_h * g.out_w)]);
    float* const t1 = t1_buf.get();
    float* const t2 = t2_buf.get();
    const std::vector<float> outside_row(std::size_t(g.out_w), outside.columns),
        outside_slice_row(std::size_t(g.out_w), outside.slices);
    for (int v = 0; v < p.volumes; ++v) {
      const T* src = in + v * D * H * W;
      // rows: t1 row (z, y) from source row (z, y) extended along x
      parallel_units(threads, D * H, [&](long long r) {
        thread_local line_vector<float> ext;
        ext.resize(std::size_t(span));
        const float* row = source_row(src + r * W, W, first, span, b, outside.rows, ext.data());
        taps_rows(&row, f_.row.data(), 1, p.kw, g.out_w, t1 + r * g.out_w);
      });
      // columns: t2 row (z, y) from t1 rows (z, y + oy - i)
      parallel_units(threads, D * g.out_h, [&](long long r) {
        const long long z = r / g.out_h, y = r % g.out_h;
        thread_local std::vector<const float*> rows;
        rows.resize(std::size_t(p.kh));
        for (int i = 0; i < p.kh; ++i) {
          const int s = border_index(y + g.oy - i, (int)H, b);
          rows[std::size_t(i)] = s < 0 ? outside_row.data() : t1 + (z * H + s) * g.out_w;
        }
        taps_rows(rows.data(), f_.column.data(), p.kh, 1, g.out_w, t2 + r * g.out_w);
      });
      // slices: output row (z, y) from t2 rows (z + oz - l, y)
      T* dst = out + v * g.out_d * g.out_h * g.out_w;
      parallel_units(threads, g.out_d * g.out_h, [&](long long r) {
        const long long z = r / g.out_h, y = r % g.out_h;
        thread_local std::vector<const float*> rows;
        rows.resize(std::size_t(p.kd));
        for (int l = 0; l < p.kd; ++l) {
          const int s = border_index(z + g.oz - l, (int)D, b);
          rows[std::size_t(l)] = s < 0 ? outside_slice_row.data() : t2 + (s * g.out_h + y) * g.out_w;
        }
        taps_rows(rows.data(), f_.depth.data(), p.kd, 1, g.out_w, dst + r * g.out_w);
      });
    }
  }

  rank1_3d_factors f_;
};

}  // namespace

std::unique_ptr<plan3d::impl> make_cpu3d_separable(problem3d p, rank1_3d_factors f) {
  return std::make_unique<cpu3d_separable>(std::move(p), std::move(f));
}

}  // namespace gpuconv::conv
