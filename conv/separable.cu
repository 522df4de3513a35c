// The separable path's passes (separable.hpp): per kernel of the bank and chunk of planes, the
// row pass into the float intermediate and the column pass into the output planes.
#include "separable.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gpuconv::conv {

separable_tiles::separable_tiles(const rank1_factors& f, int count, int kh, int kw)
    : count_(count), kh_(kh), kw_(kw), rows_(f.row, count, 1, kw), columns_(f.column, count, kh, 1) {
  if (!supports(kh, kw))
    throw std::invalid_argument("separable_tiles: a " + std::to_string(kh) + " x " + std::to_string(kw) +
                                " kernel's passes do not fit the shared tile");
}

template <typename T>
void separable_tiles::run(const T* in, T* out, const tile_map& m, float* intermediate, long long chunk,
                          cudaStream_t stream) const {
  if (m.kh != kh_ || m.kw != kw_ || m.kernels != count_)
    throw std::invalid_argument("separable_tiles::run: the map's kernels are not the plan's");
  if (chunk < 1) throw std::invalid_argument("separable_tiles::run: a chunk of " + std::to_string(chunk) + " planes");
  const long long planes = m.tiles_per_kernel / m.tiles_per_plane, tmp_h = m.out_h + kh_ - 1;
  for (long long p0 = 0; p0 < planes; p0 += chunk) {
    const long long n = std::min(chunk, planes - p0);
    const T* src = in + p0 * m.height * m.width;
    T* dst = out + p0 * count_ * m.out_h * m.out_w;
    for (int k = 0; k < count_; ++k) {
      // row pass: the rows the column pass reads, out_h + kh - 1 of them from row oy - (kh - 1)
      const window_map rows{m.height, m.width, tmp_h, m.out_w, m.oy - (kh_ - 1), m.ox, m.border, m.constant_value,
                            n, 1, 0};
      rows_.run(src, intermediate, rows, k, stream);
      // column pass: 'valid' along y over the intermediate, into output planes p * count + k
      const window_map columns{tmp_h, m.out_w, m.out_h, m.out_w, kh_ - 1, 0, boundary::zero, 0.f, n, count_, k};
      columns_.run(static_cast<const float*>(intermediate), dst, columns, k, stream);
    }
  }
}

template void separable_tiles::run<float>(const float*, float*, const tile_map&, float*, long long, cudaStream_t) const;
template void separable_tiles::run<std::uint8_t>(const std::uint8_t*, std::uint8_t*, const tile_map&, float*, long long,
                                                 cudaStream_t) const;
template void separable_tiles::run<std::uint16_t>(const std::uint16_t*, std::uint16_t*, const tile_map&, float*,
                                                  long long, cudaStream_t) const;

}  // namespace gpuconv::conv
