// The direct path's walks for 8-bit pixels in and out (direct_walks.cuh), with the tensor-core
// walk (direct_mma.cuh) that direct_tiles::run prefers for them where it applies.
#include "direct_mma.cuh"
#include "direct_walks.cuh"

namespace gpuconv::conv {

namespace {
// a float as the fp16 pair (v, v) (exact for the powers of two of the walk's window factor)
unsigned window_pair(float v) { return unsigned(half_bits(v)) * 0x10001u; }
}  // namespace

void direct_tiles::run_mma(const std::uint8_t* in, std::uint8_t* out, const window_map& m, int kernel,
                           cudaStream_t stream) const {
  using P = mma_walk_policy;
  const long long tiles_y = (m.out_h + P::tile_h - 1) / P::tile_h, tiles_x = (m.out_w + P::tile_w - 1) / P::tile_w;
  const long long blocks = m.planes * tiles_y * tiles_x;
  if (blocks < 1) return;
  if (blocks >= (1LL << 31))
    throw std::invalid_argument("direct_tiles::run: " + std::to_string(blocks) + " blocks in one launch (at most 2^31 - 1)");
  const int sh = mma_shift(m.ox, kw_);
  mma_walk_args a{m,
                  kh_,
                  kw_,
                  sh,
                  reinterpret_cast<const uint4*>(mma_tables_.data() + (std::size_t(kernel) * 4 + sh) * kh_ * 32 * 4),
                  window_pair(1.f / scales_[kernel]),
                  window_pair(-1024.f / scales_[kernel]),
                  divider(tiles_x),
                  divider(tiles_y * tiles_x),
                  m.out_w % 16 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0,
                  m.width % 4 == 0 && reinterpret_cast<std::uintptr_t>(in) % 4 == 0};
  const std::size_t shared = std::size_t(P::max_k) * 32 * 16 + std::size_t(P::tile_h + kh_ - 1) * P::window_w * 2;
  auto* fn = &mma_window_kernel<P>;
  allow_dynamic_shared(fn, shared);
  fn<<<(unsigned)blocks, P::threads, shared, stream>>>(in, out, a);
  check_launch("mma_window_kernel");
}

template void direct_tiles::run<std::uint8_t, std::uint8_t>(const std::uint8_t*, std::uint8_t*, const window_map&, int, cudaStream_t) const;

}  // namespace gpuconv::conv
