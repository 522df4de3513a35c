// Division of 31-bit unsigned numbers by a divisor fixed at launch, as one wide multiply and a
// shift (a kernel's block or tile index into plane, row and column: a division by a run-time
// value is ~20 instructions on the GPU). For d >= 1, l = ceil(log2 d) and m = ceil(2^(31+l) / d):
// floor(n / d) = floor(n m / 2^(31+l)) for every n < 2^31, since n m / 2^(31+l) = n / d + n e /
// (d 2^(31+l)) with e = m d - 2^(31+l) in [0, d), whose second term is below 1/d; and m < 2^32
// (m = 2^31 where d is a power of two, below 2^(31+l) / 2^(l-1) + 1 otherwise).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "../fft/thread/config.hpp"

namespace gpuconv::conv {

struct divider {
  std::uint32_t d = 1, m = 1u << 31;
  int s = 31;

  divider() = default;
  explicit divider(long long divisor) {
    if (divisor < 1 || divisor >= (1LL << 31))
      throw std::invalid_argument("divider: " + std::to_string(divisor) + " (1 .. 2^31 - 1)");
    d = std::uint32_t(divisor);
    s = 31 + fft::log2_exact(divisor);  // (the smallest l with 2^l >= divisor)
    m = std::uint32_t(((std::uint64_t(1) << s) + d - 1) / d);
  }
  // n < 2^31
  HOST_DEVICE std::uint32_t quotient(std::uint32_t n) const { return std::uint32_t((std::uint64_t(n) * m) >> s); }
  HOST_DEVICE std::uint32_t remainder(std::uint32_t n, std::uint32_t q) const { return n - q * d; }
};

// Block b of a launch over planes x rows x columns of tiles (b < 2^31, per_plane = rows x
// columns): its plane, and its tile's row and column in the plane.
struct block_tile {
  std::uint32_t plane, row, column;
};
HOST_DEVICE inline block_tile split_block(std::uint32_t b, const divider& per_plane, const divider& columns) {
  const std::uint32_t plane = per_plane.quotient(b), t = per_plane.remainder(b, plane), row = columns.quotient(t);
  return {plane, row, columns.remainder(t, row)};
}

}  // namespace gpuconv::conv
