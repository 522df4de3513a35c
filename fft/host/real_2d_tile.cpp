#include "real_2d_tile.hpp"

#include <stdexcept>
#include <string>

#include "../plan/twiddle_table.hpp"
#include "isa.hpp"

namespace gpuconv::fft::host {

const tile_kernels& best_tile_kernels() {
#if defined(__x86_64__) && defined(GPUCONV_HOST_ISA_DISPATCH)
  switch (selected_host_isa()) {
    case host_isa::avx512: return isa_v4::kernels;
    case host_isa::avx2: return isa_v3::kernels;
    default: return isa_base::kernels;
  }
#else
  return isa_base::kernels;
#endif
}

namespace {

// out[c * out_stride + r] = in[r * in_stride + c], r < rows, c < cols, in 16 x 16 blocks
void transpose(const float* in, long long in_stride, float* out, long long out_stride, int rows, int cols) {
  constexpr int b = 16;
  for (int r0 = 0; r0 < rows; r0 += b)
    for (int c0 = 0; c0 < cols; c0 += b) {
      const int r1 = r0 + b < rows ? r0 + b : rows, c1 = c0 + b < cols ? c0 + b : cols;
      for (int r = r0; r < r1; ++r)
        for (int c = c0; c < c1; ++c) out[c * out_stride + r] = in[r * in_stride + c];
    }
}

}  // namespace

void split_twiddle_table(int n, line_vector<float>& re, line_vector<float>& im) {
  const auto t = twiddle_table<float>(n);
  re.resize(n);
  im.resize(n);
  for (int e = 0; e < n; ++e) re[e] = t[e].re, im[e] = t[e].im;
}

real_2d_tile_plan::real_2d_tile_plan(int th, int tw, const tile_kernels& kernels)
    : th_(th), tw_(tw), half_(th / 2), lanes_((th / 2 + 1 + 15) / 16 * 16), k_(kernels) {
  if (!is_pow2(th) || th < 4 || th > 65536 || !is_pow2(tw) || tw < 16 || tw > 65536)
    throw std::invalid_argument("host::real_2d_tile_plan: tile " + std::to_string(th) + " x " + std::to_string(tw) +
                                " is not powers of two in [4, 65536] x [16, 65536]");
  split_twiddle_table(th, col_re_, col_im_);
  split_twiddle_table(2 * tw, row_re_, row_im_);
}

real_2d_tile_plan::workspace real_2d_tile_plan::make_workspace() const {
  const std::size_t z = (std::size_t)half_ * tw_, x = (std::size_t)(half_ + 1) * tw_, s = (std::size_t)spectrum_floats();
  const std::size_t scratch = z > s ? z : s;
  return {line_vector<float>(z), line_vector<float>(z), line_vector<float>(x), line_vector<float>(x),
          line_vector<float>(s), line_vector<float>(s), line_vector<float>(scratch), line_vector<float>(scratch)};
}

void real_2d_tile_plan::forward(workspace& ws) const {
  k_.passes(ws.z_re.data(), ws.z_im.data(), ws.scratch_re.data(), ws.scratch_im.data(), half_, tw_, col_re_.data(),
            col_im_.data(), false);
  k_.r2c_post(ws.z_re.data(), ws.z_im.data(), ws.x_re.data(), ws.x_im.data(), half_, tw_, col_re_.data(), col_im_.data());
  transpose(ws.x_re.data(), tw_, ws.s_re.data(), lanes_, half_ + 1, tw_);
  transpose(ws.x_im.data(), tw_, ws.s_im.data(), lanes_, half_ + 1, tw_);
  k_.passes(ws.s_re.data(), ws.s_im.data(), ws.scratch_re.data(), ws.scratch_im.data(), tw_, lanes_, row_re_.data(),
            row_im_.data(), false);
}

void real_2d_tile_plan::multiply(workspace& ws, const float* spectrum_re, const float* spectrum_im) const {
  k_.multiply(ws.s_re.data(), ws.s_im.data(), spectrum_re, spectrum_im, spectrum_floats());
}

void real_2d_tile_plan::inverse(workspace& ws) const {
  k_.passes(ws.s_re.data(), ws.s_im.data(), ws.scratch_re.data(), ws.scratch_im.data(), tw_, lanes_, row_re_.data(),
            row_im_.data(), true);
  transpose(ws.s_re.data(), lanes_, ws.x_re.data(), tw_, tw_, half_ + 1);
  transpose(ws.s_im.data(), lanes_, ws.x_im.data(), tw_, tw_, half_ + 1);
  k_.c2r_pre(ws.x_re.data(), ws.x_im.data(), ws.z_re.data(), ws.z_im.data(), half_, tw_, col_re_.data(), col_im_.data());
  k_.passes(ws.z_re.data(), ws.z_im.data(), ws.scratch_re.data(), ws.scratch_im.data(), half_, tw_, col_re_.data(),
            col_im_.data(), true);
}

}  // namespace gpuconv::fft::host
