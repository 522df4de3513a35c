#include "fused.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fft/host/mixed_double.hpp"
#include "fft/host/real_1d_host.hpp"
#include "fft/plan/device_table.hpp"
#include "fft/plan/dispatch.hpp"
#include "fused_mixed.cuh"
#include "fused_tile.cuh"

namespace gpuconv::conv {

namespace {

using cf = fft::complex_t<float>;

template <typename policy>
void allow_mixed_shared() {
  constexpr int bytes = fused_mixed_shared_bytes<policy>;
  GPUCONV_CUDA(cudaFuncSetAttribute(&fused_mixed_kernel<policy, float, float>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  GPUCONV_CUDA(cudaFuncSetAttribute(&fused_mixed_kernel<policy, std::uint8_t, std::uint8_t>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  GPUCONV_CUDA(cudaFuncSetAttribute(&fused_mixed_kernel<policy, std::uint16_t, std::uint16_t>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

}  // namespace

std::vector<fft::complex_t<double>> fused_tiles::spectrum_double(int tile, const float* kernel, int kh, int kw) {
  if (!fft::is_pow2(tile)) {
    std::vector<fft::complex_t<double>> roots, b;  // W_T^e
    for (int e = 0; e < tile; ++e) roots.push_back(fft::unit_root(e, tile));
    fft::dispatch_mixed(tile, [&](auto n) {
      constexpr int N = decltype(n)::value;
      b = spectrum_rows_then_columns(tile, kernel, kh, kw, [&](fft::complex_t<double>* p, int rows) {
        for (int r = 0; r < rows; ++r) fft::host::mixed_forward_double<N>(p + std::size_t(r) * tile, roots);
      });
    });
    return b;
  }
  const fft::host::complex_1d_plan<double> plan(tile);
  std::vector<fft::complex_t<double>> scratch(tile);
  return spectrum_rows_then_columns(tile, kernel, kh, kw,
                                    [&](fft::complex_t<double>* p, int rows) { plan.forward(p, rows, scratch.data()); });
}

std::vector<cf> fused_tiles::spectrum(int tile, const float* kernel, int kh, int kw) {
  const auto b = spectrum_double(tile, kernel, kh, kw);
  const double scale = 1.0 / (double(tile) * tile);
  std::vector<cf> out(b.size());
  for (std::size_t e = 0; e < out.size(); ++e) out[e] = {float(b[e].re * scale), float(b[e].im * scale)};
  return out;
}

fused_tiles::fused_tiles(int tile, const std::vector<float>& kernels, int count, int kh, int kw)
    : tile_(tile), count_(count) {
#ifdef GPUCONV_FUSED_PERSISTENT  // tuning builds: a grid of this many waves of resident blocks
  int device = 0, sms = 0, per_sm = 0;
  GPUCONV_CUDA(cudaGetDevice(&device));
  GPUCONV_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  dispatch_fused_tile(tile, [&](auto t) {
    using policy = typename fused_policy_for<decltype(t)::value>::type;
    if constexpr (fused_tile_shared_bytes<policy> > 48 * 1024)
      GPUCONV_CUDA(cudaFuncSetAttribute(&fused_tile_kernel<policy, float, float>, cudaFuncAttributeMaxDynamicSharedMemorySize, fused_tile_shared_bytes<policy>));
    GPUCONV_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, &fused_tile_kernel<policy, float, float>,
                                                              policy::block_threads, fused_tile_shared_bytes<policy>));
  });
  max_grid_ = (long long)std::max(per_sm, 1) * sms * GPUCONV_FUSED_PERSISTENT;
#endif
  if (!supports(tile))
    throw std::invalid_argument("fused_tiles: tile " + std::to_string(tile) + " is not 32, 64, 80 or 128");
  if (kh > tile || kw > tile)
    throw std::invalid_argument("fused_tiles: kernel " + std::to_string(kh) + " x " + std::to_string(kw) +
                                " does not fit a " + std::to_string(tile) + " tile");
  if (count < 1 || kernels.size() != std::size_t(count) * kh * kw)
    throw std::invalid_argument("fused_tiles: " + std::to_string(kernels.size()) + " kernel values for " +
                                std::to_string(count) + " kernels of " + std::to_string(kh) + " x " + std::to_string(kw));
  spectrum_ = device_spectra(tile, kernels, count, kh, kw);
  if (tile == mixed_tile) {
    table_ = fft::device_column_table(tile);  // block_mixed_fft_t's W_{2M}^e, then W_T^e
    allow_mixed_shared<fused_mixed_80>();
    return;
  }
  table_ = fft::device_twiddle_table(2 * tile);  // block_fft_t's W_{2N}^e
  // tiles of 128 need more than the default 48 KB of dynamic shared memory: raise it once, here
  dispatch_fused_tile(tile, [&](auto t) {
    using policy = typename fused_policy_for<decltype(t)::value>::type;
    if constexpr (fused_tile_shared_bytes<policy> > 48 * 1024) {
      constexpr int bytes = fused_tile_shared_bytes<policy>;
      GPUCONV_CUDA(cudaFuncSetAttribute(&fused_tile_kernel<policy, float, float>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      GPUCONV_CUDA(cudaFuncSetAttribute(&fused_tile_kernel<policy, std::uint8_t, std::uint8_t>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      GPUCONV_CUDA(cudaFuncSetAttribute(&fused_tile_kernel<policy, std::uint16_t, std::uint16_t>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    }
  });
}

device_buffer<cf> fused_tiles::device_spectra(int tile, const std::vector<float>& kernels, int count, int kh, int kw) {
  const std::size_t per = std::size_t(tile) * tile;
  // every kernel's spectrum into one host array, then one upload (and one wait) for the bank, not one a kernel
  std::vector<cf> host(per * count);
  for (int k = 0; k < count; ++k) {
    const auto s = spectrum(tile, kernels.data() + std::size_t(k) * kh * kw, kh, kw);
    std::copy(s.begin(), s.end(), host.begin() + per * k);
  }
  device_buffer<cf> out(per * count);
  upload(out.data(), host.data(), host.size() * sizeof(cf));
  return out;
}

template <typename in_t, typename out_t>
void fused_tiles::run(const in_t* in, out_t* out, const tile_map& m, cudaStream_t stream) const {
  if (m.tile_h != tile_ || m.tile_w != tile_)
    throw std::invalid_argument("fused_tiles::run: the map's tiles are not " + std::to_string(tile_) + " square");
  if (m.kernels != count_)
    throw std::invalid_argument("fused_tiles::run: the map has " + std::to_string(m.kernels) + " kernels, the plan " +
                                std::to_string(count_));
  const long long total_tiles = m.tiles_per_kernel * m.kernels;
  if (total_tiles < 1) return;
  if (total_tiles >= (1LL << 31))
    throw std::invalid_argument("fused_tiles::run: " + std::to_string(total_tiles) + " tiles in one launch (at most 2^31 - 1)");
  // the two-tile kernels' grid: a block a pair of tiles (a kernel's tiles pair up within it)
  const long long pairs = (m.tiles_per_kernel + 1) / 2 * m.kernels;
  const unsigned pair_grid = (unsigned)std::min<long long>(pairs, max_grid_);
  if (tile_ == mixed_tile) {
    using policy = fused_mixed_80;
    fused_mixed_kernel<policy, in_t, out_t><<<pair_grid, policy::block_threads, fused_mixed_shared_bytes<policy>, stream>>>(
        in, out, m, spectrum_.data(), table_.data());
    check_launch("fused_mixed_kernel");
    return;
  }
  dispatch_fused_tile(tile_, [&](auto t) {
    using policy = typename fused_policy_for<decltype(t)::value>::type;
    fused_tile_kernel<policy, in_t, out_t><<<pair_grid, policy::block_threads, fused_tile_shared_bytes<policy>, stream>>>(
        in, out, m, spectrum_.data(), table_.data());
    check_launch("fused_tile_kernel");
  });
}

#define GPUCONV_FUSED_RUN(in_t, out_t) \
  template void fused_tiles::run<in_t, out_t>(const in_t*, out_t*, const tile_map&, cudaStream_t) const;
GPUCONV_FUSED_RUN(float, float)
GPUCONV_FUSED_RUN(std::uint8_t, std::uint8_t)
GPUCONV_FUSED_RUN(std::uint16_t, std::uint16_t)
#undef GPUCONV_FUSED_RUN

}  // namespace gpuconv::conv
