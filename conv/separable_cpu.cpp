// The CPU backend's separable method (method.hpp): a rank-1 kernel k(i, j) = c(i) r(j) runs
// as a row pass (r over each extended source row) and a column pass (c over the filtered
// rows), kh + kw multiply-adds per output instead of kh * kw. Units of max(64, 4 kh) output
// rows x full-width strips (cpu_rows.hpp, ring_units): each source row is filtered
// once into a ring of kh + 7 rows (kh + 22 when row_taps16 makes them 16 at once) that stays
// in the core's L2, and every eight output rows are summed from the ring in one column call
// (cpu_rows.hpp, column_rows: each ring row loaded once for the eight) and stored (rounded
// and saturated for narrow pixels) as soon as their filtered rows are there: one pass over
// the image, no band of filtered rows. The row pass (cpu_rows.hpp, row_taps, row_taps16)
// reads the source rows in place, uint8/uint16 widened in registers; only the outputs at the
// boundary read extended rows. uint8 images with long kernels run in 16-bit fixed point on
// hosts with AVX-512 VNNI instead (separable_vnni.hpp, run_fixed below).
#include "../fft/host/isa.hpp"
#include "cpu_rows.hpp"
#include "separable_vnni.hpp"

namespace gpuconv::conv {

namespace {

class cpu_separable final : public plan::impl {
 public:
  // the units (cpu_rows.hpp) are the plan's: worked out once, not at every call
  cpu_separable(problem p, rank1_factors f)
      : impl(std::move(p)), f_(std::move(f)), fixed_(fixed_bank(f_, prob.kernels, prob.kh, prob.kw)),
        units_(ring_units(prob, prob.kw, prob.kh, prob.map.out_h, 8)) {}

  backend kind() const override { return backend::cpu; }
  cpu_method method() const override { return cpu_method::separable; }

  void execute(const void* in, void* out, pixel px) override {
    if (px == pixel::u8 && !fixed_.empty() && fft::host::selected_host_vnni())
      return run_fixed(static_cast<const std::uint8_t*>(in), static_cast<std::uint8_t*>(out));
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
      thread_local line_vector<float> ext, ring;
      thread_local std::vector<const float*> rows;
      ext.resize((std::size_t)(row_taps_pad + ext_w));
      // a ring of kh + column_block - 1 filtered rows (the column pass's last block of output
      // rows reads them all), row_group - 1 more where the rows are made row_group at once
      // (row_taps16: the kernel wide enough for its transposes to pay, the host with AVX-512),
      // which may run that far ahead of the column pass
      const bool grouped = kw >= row_group_min_taps && row_group_available();
      const int ring_rows = kh + column_block - 1 + (grouped ? row_group - 1 : 0);
      const long long stride = ring_stride(n);
      ring.resize((std::size_t)(ring_rows * stride));
      rows.resize(ring_rows);
      // filtered source row q of the unit (q = 0: the band's first output row's top tap)
      // into ring slot q mod ring_rows. Outputs [lo, hi), whose taps and the row_taps_pad
      // values before them lie inside the image row, read the source row in place in its pixel
      // type (no float copy); those left and right of them (the boundary's) an extended row
      // built by extend_row in float after row_taps_pad values of ext. Each output's sum is the
      // same whichever call computes it.
      // The boundary's spans take at least 16 outputs where they are not empty (fewer would
      // run row_taps's scalar loop: 15 outputs at the right edge of each 4096-wide row of
      // K = 31 took 5% of the time); none is read in place where fewer than 16 would be.
      const long long first = x0 + p.geo.ox - (kw - 1);
      long long lo = std::clamp<long long>(row_taps_pad - first, 0, n),
                hi = std::clamp<long long>(p.width - (kw - 1) - first, lo, n);
      if (lo > 0) lo = std::max(lo, 16LL);
      if (hi < n) hi = std::min(hi, n - 16);
      if (hi - lo < 16) lo = hi = n;
      auto source = [&](long long q) { return source_at(in, plane, y0, q); };
      auto filtered = [&](long long q) { return ring.data() + (q % ring_rows) * stride; };
      auto extended = [&](const T* src_row, const float* row, float* to, long long t0, long long t1) {
        if (t0 >= t1) return;
        extend_row(src_row, p.width, first + t0, t1 - t0 + kw - 1, b, outside, ext.data() + row_taps_pad);
        row_taps(ext.data() + row_taps_pad, row, kw, t1 - t0, to + t0);
      };
      auto row_pass = [&](const float* row, long long q) {
        const T* src_row = source(q);
        float* to = filtered(q);
        if (!src_row) return extended(src_row, row, to, 0, n);
        extended(src_row, row, to, 0, lo);
        if (lo < hi) row_taps(src_row + first + lo, row, kw, hi - lo, to + lo);
        extended(src_row, row, to, hi, n);
      };
      // rows [q, q + row_group) at once; false (nothing done) where one lies outside the image
      auto group_pass = [&](const float* row, long long q) {
        const T* src_rows[row_group];
        const T* spans[row_group];
        float* to[row_group];
        for (int i = 0; i < row_group; ++i) {
          if (!(src_rows[i] = source(q + i))) return false;
          spans[i] = src_rows[i] + first + lo;
          to[i] = filtered(q + i) + lo;
        }
        row_taps16(spans, row, kw, hi - lo, to);  // grouped: row_group_available(); hi - lo >= 16
        for (int i = 0; i < row_group; ++i) {
          extended(src_rows[i], row, to[i] - lo, 0, lo);
          extended(src_rows[i], row, to[i] - lo, hi, n);
        }
        return true;
      };
      const long long total = kh - 1 + (y1 - y0);  // filtered rows the unit needs
      for (int k = 0; k < p.kernels; ++k) {
        const float* column = f_.column.data() + (std::size_t)k * kh;
        const float* row = f_.row.data() + (std::size_t)k * kw;
        long long made = 0;  // filtered rows [0, made) are in the ring
        auto make = [&](long long upto) {
          while (made < upto) {
            if (grouped && lo < hi && total - made >= row_group && group_pass(row, made)) made += row_group;
            else row_pass(row, made++);
          }
        };
        make(kh - 1);
        // output rows [y, y + count) read filtered rows newest - m, m < kh + count - 1
        for (long long y = y0; y < y1; y += column_block) {
          const int count = (int)std::min<long long>(column_block, y1 - y);
          const long long newest = y - y0 + kh - 1 + count - 1;
          make(newest + 1);
          for (int m = 0; m < kh + count - 1; ++m) rows[m] = filtered(newest - m);
          column_rows(rows.data(), column, kh, count, n,
                      out + ((plane * p.kernels + k) * p.map.out_h + y) * p.map.out_w + x0, p.map.out_w);
        }
      }
    });
  }

  // The uint8 passes in fixed point (separable_vnni.hpp), on the same units as run(): each
  // source row widened to int16 with the boundary applied (extend_row's values), filtered into
  // one of two int16 rows, and each consecutive two interleaved into a ring of pair rows, from
  // which the column pass sums up to column_block output rows a call. Pair row q needs filtered
  // row q + 1: a band whose kernel has an odd height filters one row past its last tap.
  void run_fixed(const std::uint8_t* in, std::uint8_t* out) const {
    const problem& p = prob;
    const int kh = p.kh, kw = p.kw, mc = (kh + 1) / 2;
    const row_units& units = units_;
    const auto outside = std::int16_t(outside_value(p, pixel::u8));
    const boundary b = p.options.semantics.border;
    parallel_units(cpu_threads(p), p.planes * units.per_plane(), [&](long long u) {
      const auto [plane, y0, y1, x0, n] = units.at(u);
      const long long w = vnni_width(n), span = n + kw - 1;
      thread_local line_vector<std::int16_t> ext, filtered;
      thread_local line_vector<std::int32_t> ring;
      thread_local std::vector<const std::int32_t*> rows;
      ext.assign((std::size_t)vnni_ext_length(n, kw), 0);
      filtered.resize((std::size_t)(2 * w));
      const int ring_rows = column_block + 2 * mc;  // a column call reads count + 2 (mc - 1)
      // pair rows a cache line apart where w int32 would be a multiple of 1 KB (ring_stride's
      // reason: the column pass reads up to kh + 7 of them at one offset)
      const long long stride = w % 256 == 0 ? w + 16 : w;
      ring.resize((std::size_t)(ring_rows * stride));
      rows.resize((std::size_t)ring_rows);
      const long long first = x0 + p.geo.ox - (kw - 1);
      auto pair_row = [&](long long q) { return ring.data() + (q % ring_rows) * stride; };
      for (int k = 0; k < p.kernels; ++k) {
        const fixed_rank1& f = fixed_[(std::size_t)k];
        long long made = 0;  // filtered rows [0, made), pair rows [0, made - 1)
        for (long long y = y0; y < y1; y += column_block) {
          const int count = (int)std::min<long long>(column_block, y1 - y);
          const long long r = y - y0, newest = r + count - 1 + 2 * (mc - 1);
          for (; made <= newest + 1; ++made) {
            extend_row(source_at(in, plane, y0, made), p.width, first, span, b, outside, ext.data());
            std::int16_t* t = filtered.data() + (made & 1) * w;
            vnni_row(ext.data(), f, n, t);
            if (made > 0) vnni_pairs(filtered.data() + ((made - 1) & 1) * w, t, n, pair_row(made - 1));
          }
          for (long long j = 0; j <= newest - r; ++j) rows[(std::size_t)j] = pair_row(r + j);
          vnni_column(rows.data(), f, count, n, out + ((plane * p.kernels + k) * p.map.out_h + y) * p.map.out_w + x0,
                      p.map.out_w);
        }
      }
    });
  }

  // Source row q of a unit whose output rows start at y0 (q = 0: the first output row's top tap);
  // nullptr where it lies outside the image (zero and constant boundaries: the outside value)
  template <typename T>
  const T* source_at(const T* in, long long plane, long long y0, long long q) const {
    const int src = border_index(y0 + prob.geo.oy - (prob.kh - 1) + q, (int)prob.height, prob.options.semantics.border);
    return src < 0 ? nullptr : in + (plane * prob.height + src) * prob.width;
  }

  rank1_factors f_;
  // uint8 calls run in fixed point where every kernel of the bank allows it (separable_vnni.hpp)
  const std::vector<fixed_rank1> fixed_;  // empty: the float path for this bank
  const row_units units_;
};

}  // namespace

std::unique_ptr<plan::impl> make_cpu_separable(problem p, rank1_factors f) {
  return std::make_unique<cpu_separable>(std::move(p), std::move(f));
}

}  // namespace gpuconv::conv
