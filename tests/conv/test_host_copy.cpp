// parallel_copy: the parallel memcpy behind plan::execute on host buffers. Every byte of every
// segment lands where it belongs, for segment lists that split across the copiers anywhere.
#include <catch2/catch_test_macros.hpp>

#include <cstdint>
#include <vector>

#include "conv/host_copy.hpp"

using gpuconv::conv::copy_segment;
using gpuconv::conv::parallel_copy;

TEST_CASE("parallel_copy copies every segment exactly, any thread count, split and bytes a thread", "[conv]") {
  const std::size_t mb = std::size_t(1) << 20;
  // the application's default bytes a thread, plan::execute's staging, and a thread per byte
  const std::size_t per_threads[] = {gpuconv::conv::copy_bytes_per_thread, gpuconv::conv::staging_bytes_per_thread, 1};
  const int thread_counts[] = {1, 2, 3, 8};
  for (int run = 0; run < 12; ++run) {
    const std::size_t per_thread = per_threads[run / 4];
    const int threads = thread_counts[run % 4];
    // sizes around the split points: tiny, odd, several MB, one segment much larger
    for (const std::vector<std::size_t>& sizes : std::vector<std::vector<std::size_t>>{
             {0}, {1}, {7, 0, 13}, {5 * mb + 3}, {mb, 1, mb + 17, 3 * mb, 2}, {64 * 1024, 9 * mb + 1, 5}}) {
      std::size_t total = 0;
      for (std::size_t s : sizes) total += s;
      std::vector<std::uint8_t> src(total + 1), dst(total + 64, 0xEE);
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::uint8_t(i * 131 + 7);
      // segments copy src in order into dst with a 1-byte gap after each
      std::vector<copy_segment> segs;
      std::size_t at = 0, out = 0;
      for (std::size_t s : sizes) {
        segs.push_back({dst.data() + out, src.data() + at, s});
        at += s;
        out += s + 1;
      }
      parallel_copy(threads, segs, per_thread);
      at = out = 0;
      bool same = true;
      for (std::size_t s : sizes) {
        for (std::size_t i = 0; i < s; ++i) same = same && dst[out + i] == src[at + i];
        same = same && dst[out + s] == 0xEE;  // the gap stays untouched
        at += s;
        out += s + 1;
      }
      INFO(threads << " threads, a thread a " << per_thread << " bytes, " << sizes.size() << " segments, " << total << " bytes");
      CHECK(same);
    }
  }
}
