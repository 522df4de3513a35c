#include "three_pass.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fft/plan/device_table.hpp"
#include "fused.hpp"
#include "three_pass.cuh"

namespace gpuconv::conv {

namespace {

using cf = fft::complex_t<float>;

// Rows per block: 16 (128-byte runs in the work layout) where 16 rows of the tile take at
// most 512 threads and ~70 KB of shared memory; 8 for 1024-tiles.
#ifndef GPUCONV_THREE_PASS_ROWS  // tuning builds: rows per block of the row kernels (0: the rule above)
#define GPUCONV_THREE_PASS_ROWS 0
#endif
#ifndef GPUCONV_THREE_PASS_ITEMS  // tuning builds: values per thread, row and column kernels
#define GPUCONV_THREE_PASS_ITEMS 16
#endif
#ifndef GPUCONV_THREE_PASS_COLUMN_ITEMS
#define GPUCONV_THREE_PASS_COLUMN_ITEMS 16
#endif
template <int tile>
using policy_for =
    three_pass_policy<tile, GPUCONV_THREE_PASS_ROWS ? GPUCONV_THREE_PASS_ROWS : tile >= 1024 ? 8 : 16, GPUCONV_THREE_PASS_ITEMS>;
// the column kernel's lines per block (GPUCONV_THREE_PASS_COLUMN_LINES, tuning builds)
template <int tile>
using column_policy_for = three_pass_policy<tile, GPUCONV_THREE_PASS_COLUMN_LINES ? GPUCONV_THREE_PASS_COLUMN_LINES : policy_for<tile>::rows,
                                            GPUCONV_THREE_PASS_COLUMN_ITEMS>;

template <typename F>
void dispatch_tile(int tile, F&& f) {
  switch (tile) {
    case 256: f(std::integral_constant<int, 256>{}); return;
    case 512: f(std::integral_constant<int, 512>{}); return;
    case 1024: f(std::integral_constant<int, 1024>{}); return;
    default: throw std::invalid_argument("three_pass_tiles: tile " + std::to_string(tile) + " is not 256, 512 or 1024");
  }
}

template <typename policy, typename in_t, typename out_t>
void raise_shared_limit() {
  constexpr int bytes = policy::shared_memory_bytes;
  if constexpr (bytes > 48 * 1024) {
    GPUCONV_CUDA(cudaFuncSetAttribute(&rows_forward_kernel<policy, in_t>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    GPUCONV_CUDA(cudaFuncSetAttribute(&rows_inverse_kernel<policy, out_t>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  }
}

template <typename policy>
void raise_column_shared_limit() {
  constexpr int bytes = policy::shared_memory_bytes;
  if constexpr (bytes > 48 * 1024)
    GPUCONV_CUDA(cudaFuncSetAttribute(&columns_kernel<policy>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

}  // namespace

long long three_pass_tiles::chunk_pairs(int tile, long long pairs, std::size_t work_cap, std::size_t l2_bytes) {
  const std::size_t per = pair_bytes(tile);
  long long chunk = (long long)(work_cap / per);
  if (l2_bytes > 0) chunk = std::min(chunk, (long long)(l2_bytes / 2 / per));
  return std::clamp<long long>(chunk, 1, std::max<long long>(pairs, 1));
}

three_pass_tiles::three_pass_tiles(int tile, const std::vector<float>& kernels, int count, int kh, int kw, long long chunk)
    : tile_(tile),
      count_(count),
      chunk_(chunk) {
  if (!supports(tile)) throw std::invalid_argument("three_pass_tiles: tile " + std::to_string(tile) + " is not 256, 512 or 1024");
  if (kh > tile || kw > tile)
    throw std::invalid_argument("three_pass_tiles: kernel " + std::to_string(kh) + " x " + std::to_string(kw) +
                                " does not fit a " + std::to_string(tile) + " tile");
  if (count < 1 || kernels.size() != std::size_t(count) * kh * kw)
    throw std::invalid_argument("three_pass_tiles: " + std::to_string(kernels.size()) + " kernel values for " +
                                std::to_string(count) + " kernels of " + std::to_string(kh) + " x " + std::to_string(kw));
  if (chunk < 1) throw std::invalid_argument("three_pass_tiles: chunk " + std::to_string(chunk) + " is < 1");
  const std::size_t per = std::size_t(tile) * tile;
  spectrum_ = fused_tiles::device_spectra(tile, kernels, count, kh, kw);
  table_ = fft::device_twiddle_table(2 * tile);  // block_fft_t's W_{2N}^e
  work_ = device_buffer<cf>(std::size_t(chunk) * per);
  dispatch_tile(tile, [&](auto t) {
    using policy = policy_for<decltype(t)::value>;
    raise_shared_limit<policy, float, float>();
    raise_shared_limit<policy, std::uint8_t, std::uint8_t>();
    raise_shared_limit<policy, std::uint16_t, std::uint16_t>();
    raise_column_shared_limit<column_policy_for<decltype(t)::value>>();
  });
}

template <typename in_t, typename out_t>
void three_pass_tiles::run(const in_t* in, out_t* out, const tile_map& m, cudaStream_t stream) {
  if (m.tile_h != tile_ || m.tile_w != tile_)
    throw std::invalid_argument("three_pass_tiles::run: the map's tiles are not " + std::to_string(tile_) + " square");
  if (m.kernels != count_)
    throw std::invalid_argument("three_pass_tiles::run: the map has " + std::to_string(m.kernels) + " kernels, the plan " +
                                std::to_string(count_));
  if (m.tiles_per_kernel < 1) return;
  if (m.tiles_per_kernel * m.kernels >= (1LL << 31))
    throw std::invalid_argument("three_pass_tiles::run: " + std::to_string(m.tiles_per_kernel * m.kernels) +
                                " tiles in one plan (at most 2^31 - 1)");
  dispatch_tile(tile_, [&](auto t) {
    using policy = policy_for<decltype(t)::value>;
    constexpr int T = policy::tile, R = policy::rows, bytes = policy::shared_memory_bytes;
    // pass C transforms the rows from the last multiple of R at or below kh - 1 to T
    const int y_first = (m.kh - 1) / R * R, groups_c = (T - y_first) / R;
    const long long pairs = (m.tiles_per_kernel + 1) / 2;
    for (long long kernel = 0; kernel < m.kernels; ++kernel) {
      const cf* spectrum = spectrum_.data() + kernel * T * T;
      for (long long first = 0; first < pairs; first += chunk_) {
        const long long count = std::min(chunk_, pairs - first);
        rows_forward_kernel<policy, in_t><<<(unsigned)(count * (T / R)), policy::block_threads, bytes, stream>>>(
            in, m, kernel, first, work_.data(), table_.data());
        check_launch("rows_forward_kernel");
        using columns = column_policy_for<T>;
        columns_kernel<columns><<<(unsigned)(count * (T / columns::rows)), columns::block_threads,
                                  columns::shared_memory_bytes, stream>>>(work_.data(), spectrum, y_first, table_.data());
        check_launch("columns_kernel");
        rows_inverse_kernel<policy, out_t><<<(unsigned)(count * groups_c), policy::block_threads, bytes, stream>>>(
            work_.data(), out, m, kernel, first, y_first, groups_c, table_.data());
        check_launch("rows_inverse_kernel");
      }
    }
  });
}

#define GPUCONV_THREE_PASS_RUN(in_t, out_t) \
  template void three_pass_tiles::run<in_t, out_t>(const in_t*, out_t*, const tile_map&, cudaStream_t);
GPUCONV_THREE_PASS_RUN(float, float)
GPUCONV_THREE_PASS_RUN(std::uint8_t, std::uint8_t)
GPUCONV_THREE_PASS_RUN(std::uint16_t, std::uint16_t)
#undef GPUCONV_THREE_PASS_RUN

}  // namespace gpuconv::conv
