#include "complex_1d_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../kernels/complex_1d.cuh"
#include "../kernels/transpose.cuh"
#include "dispatch.hpp"
#include "device_table.hpp"

namespace gpuconv::fft {

namespace {

template <int n, bool inverse, typename Pointwise>
void launch(const complex_t<float>* in, complex_t<float>* out, long long rows, unsigned grid,
            const complex_t<float>* table, Pointwise op, cudaStream_t stream) {
  c2c_1d_kernel<n, inverse, Pointwise><<<grid, complex_1d_policy<n>::block_threads, 0, stream>>>(in, out, rows, table, op);
  check_launch("c2c_1d_kernel");
}

void require(const void* p, const char* what) {
  if (p == nullptr) throw std::invalid_argument(std::string("complex_1d_plan: ") + what + " is a null pointer");
}

}  // namespace

complex_1d_plan::complex_1d_plan(int n, long long rows) : n_(n), rows_(rows) {
  if (!is_pow2(n) || n < min_length || n > max_length)
    throw std::invalid_argument("complex_1d_plan: length " + std::to_string(n) + " is not a power of two in [2, 4096]");
  if (rows < 1) throw std::invalid_argument("complex_1d_plan: rows " + std::to_string(rows) + " is < 1");
  const auto host = twiddle_table<float>(2 * n);  // W_{2n}^e
  const int sms = current_device_sms();
  dispatch_pow2<2>(n, [&](auto len) {
    using policy = complex_1d_policy<decltype(len)::value>;
    int per_sm = 0;
    GPUCONV_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, c2c_1d_kernel<decltype(len)::value, false, multiply_by_spectrum>, policy::block_threads, 0));
    const long long groups = (rows + policy::rows_per_block - 1) / policy::rows_per_block;
    grid_ = (unsigned)std::min<long long>(groups, (long long)std::max(per_sm, 1) * sms * 4);
  });
  table_ = device_table_of(host);
}

void complex_1d_plan::forward(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream) const {
  require(in, "input");
  require(out, "output");
  dispatch_pow2<2>(n_, [&](auto len) { launch<decltype(len)::value, false>(in, out, rows_, grid_, table_.data(), no_pointwise{}, stream); });
}

void complex_1d_plan::inverse(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream) const {
  require(in, "input");
  require(out, "output");
  dispatch_pow2<2>(n_, [&](auto len) { launch<decltype(len)::value, true>(in, out, rows_, grid_, table_.data(), no_pointwise{}, stream); });
}

void complex_1d_plan::convolve(const complex_t<float>* in, complex_t<float>* out, const complex_t<float>* spectrum,
                               long long rows_per_set, cudaStream_t stream) const {
  require(in, "input");
  require(out, "output");
  require(spectrum, "spectrum");
  if (rows_per_set < 1) throw std::invalid_argument("complex_1d_plan: rows_per_set " + std::to_string(rows_per_set) + " is < 1");
  dispatch_pow2<2>(n_, [&](auto len) {
    launch<decltype(len)::value, false>(in, out, rows_, grid_, table_.data(), multiply_by_spectrum{spectrum, rows_per_set}, stream);
  });
}

void transpose(const complex_t<float>* in, complex_t<float>* out, long long batch, int rows, int cols,
               cudaStream_t stream) {
  if (!in || !out) throw std::invalid_argument("transpose: null pointer");
  if (batch < 1 || rows < 1 || cols < 1) throw std::invalid_argument("transpose: empty shape");
  constexpr int tile = transpose_policy::tile;
  const dim3 block(tile, transpose_policy::block_rows);
  const long long max_z = 65535;
  for (long long first = 0; first < batch; first += max_z) {
    const long long count = std::min(max_z, batch - first);
    const dim3 grid((cols + tile - 1) / tile, (rows + tile - 1) / tile, (unsigned)count);
    const long long offset = first * rows * cols;
    transpose_kernel<<<grid, block, 0, stream>>>(in + offset, out + offset, rows, cols);
    check_launch("transpose_kernel");
  }
}

}  // namespace gpuconv::fft
