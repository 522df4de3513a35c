// The CPU backend's direct method (method.hpp): out(y, x) = sum k(i, j) in_ext(y + oy - i,
// x + ox - j) term by term in float, for small kernels where kh * kw multiply-adds per output
// cost less than a tile transform. Units of output rows x full-width strips (cpu_rows.hpp,
// ring_units); each extended source row is built once into a ring of kh rows in the core's
// L2 (read in place from a float image inside the borders), and every kernel of a bank sums
// its output row from the ring as soon as the row's kh source rows are there.
#include "cpu_rows.hpp"

namespace gpuconv::conv {

namespace {

class cpu_direct final : public plan::impl {
 public:
  // the units (cpu_rows.hpp) are the plan's: worked out once, not at every call
  explicit cpu_direct(problem p)
      : impl(std::move(p)),
        units_(ring_units(prob, 1.0, double(prob.kh) * prob.kw * prob.kernels, std::max(64, 4 * prob.kh), 4)) {}

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
    const row_units& units = units_;
    const float outside = outside_value(p, px);
    const boundary b = p.options.semantics.border;
    parallel_units(cpu_threads(p), p.planes * units.per_plane(), [&](long long u) {
      const auto [plane, y0, y1, x0, n] = units.at(u);
      const long long ext_w = n + kw - 1;
      thread_local line_vector<float> ring;
      thread_local std::vector<const float*> rows, source;
      const long long stride = ring_stride(ext_w);
      ring.resize((std::size_t)(kh * stride));
      rows.resize(kh);
      source.resize(kh);
      // extended source row q of the unit (q = 0: the band's first output row's top tap), built
      // in ring slot q mod kh; read in place from a float image only for kh <= 2 (ring_stride)
      auto extend = [&](long long q) {
        const int src = border_index(y0 + p.geo.oy - (kh - 1) + q, (int)p.height, b);
        const T* row = src < 0 ? nullptr : in + (plane * p.height + src) * p.width;
        float* slot = ring.data() + (q % kh) * stride;
        const long long first = x0 + p.geo.ox - (kw - 1);
        if (kh <= 2) source[q % kh] = source_row(row, p.width, first, ext_w, b, outside, slot);
        else extend_row(row, p.width, first, ext_w, b, outside, slot), source[q % kh] = slot;
      };
      for (long long q = 0; q < kh - 1; ++q) extend(q);
      for (long long y = y0; y < y1; ++y) {
        const long long newest = y - y0 + kh - 1;  // out row y reads extended rows newest - i
        extend(newest);
        for (int i = 0; i < kh; ++i) rows[i] = source[(newest - i) % kh];
        for (int k = 0; k < p.kernels; ++k)
          taps_rows(rows.data(), p.kernel.data() + (std::size_t)k * kh * kw, kh, kw, n,
                    out + ((plane * p.kernels + k) * p.map.out_h + y) * p.map.out_w + x0);
      }
    });
  }

  const row_units units_;
};

}  // namespace

std::unique_ptr<plan::impl> make_cpu_direct(problem p) { return std::make_unique<cpu_direct>(std::move(p)); }

}  // namespace gpuconv::conv
