#include "host_copy.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cpu_pool.hpp"

namespace gpuconv::conv {

namespace {
// GPUCONV_COPY_MIN_KB=k: every copy takes a thread for each k KiB (measurements); 0 when unset
std::size_t bytes_per_thread_override() {
  static const std::size_t bytes = [] {
    const char* e = std::getenv("GPUCONV_COPY_MIN_KB");
    const long v = e ? std::atol(e) : 0;
    return v >= 16 && v <= (1 << 20) ? std::size_t(v) << 10 : std::size_t(0);
  }();
  return bytes;
}
}  // namespace

// memcpy with non-temporal stores for large copies: the destination is written without being
// read into the cache first (an ordinary store reads each line before writing it), which cuts
// the memory traffic of a large copy from three passes to two; the copies here are far larger
// than the caches and are not read again by the CPU soon (staging goes to the DMA engine).
namespace {
// GPUCONV_COPY_PLAIN=1: plain memcpy (measurements)
bool plain_copies() {
  static const bool plain = [] {
    const char* e = std::getenv("GPUCONV_COPY_PLAIN");
    return e && e[0] == '1';
  }();
  return plain;
}

// A job's bytes go out in parts_per_thread() parts a thread, handed out in turn, so that
// threads that wake late find parts left and the early ones take more (with one part a thread
// a job waits for its slowest wake-up). GPUCONV_COPY_SPLIT=k sets k (measurements). On the
// 16-vCPU H200 host, 3 x 3000 x 4000 fp32 K = 9 on pageable buffers, 7 interleaved rounds
// (docs/benchmarks.md, session 49): 1 part 61-84% of the PCIe floor, 4 parts 80-97%, 4 parts
// with the workers polling between jobs (copy_spin_us) 81-99%.
int parts_per_thread() {
  static const int k = [] {
    const char* e = std::getenv("GPUCONV_COPY_SPLIT");
    const int v = e ? std::atoi(e) : 4;
    return v >= 1 && v <= 64 ? v : 4;
  }();
  return k;
}

// The staging copies come one a unit, a fraction of a millisecond apart: the pool's workers
// poll that long for the next one instead of parking (cpu_pool.hpp; GPUCONV_POOL_SPIN_US
// overrides it). The price: after a call's last job each worker keeps its CPU busy for up to
// 200 us more.
constexpr int copy_spin_us = 200;

void stream_copy(char* dst, const char* src, std::size_t n) {
#if defined(__SSE2__)
  if (n >= 4096 && !plain_copies()) {
    const std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    const std::size_t blocks = n / 64;
    for (std::size_t i = 0; i < blocks; ++i, dst += 64, src += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
    }
    n -= blocks * 64;
  }
  std::memcpy(dst, src, n);
#else
  std::memcpy(dst, src, n);
#endif
}

// Orders this thread's non-temporal stores before the job is reported done.
void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}
}  // namespace

namespace {

// Part `index` of `parts`: bytes [total * index / parts, total * (index + 1) / parts) of the
// segments laid end to end.
void copy_part(const std::vector<copy_segment>& segments, std::size_t total, int index, int parts) {
  const std::size_t begin = total / parts * index + std::min<std::size_t>(index, total % parts);
  const std::size_t end = begin + total / parts + (std::size_t(index) < total % parts ? 1 : 0);
  std::size_t at = 0;
  for (const copy_segment& s : segments) {
    const std::size_t lo = std::max(begin, at), hi = std::min(end, at + s.bytes);
    if (lo < hi)
      stream_copy(static_cast<char*>(s.dst) + (lo - at), static_cast<const char*>(s.src) + (lo - at), hi - lo);
    at += s.bytes;
    if (at >= end) break;
  }
  stream_fence();
}

}  // namespace

void parallel_copy(int threads, const std::vector<copy_segment>& segments, std::size_t bytes_per_thread) {
  std::size_t total = 0;
  for (const copy_segment& s : segments) total += s.bytes;
  if (const std::size_t o = bytes_per_thread_override()) bytes_per_thread = o;
  bytes_per_thread = std::max<std::size_t>(bytes_per_thread, 1);
  const int workers = (int)std::min<std::size_t>(std::max(threads, 1), std::max<std::size_t>(1, total / bytes_per_thread));
  if (workers <= 1) {
    for (const copy_segment& s : segments) std::memcpy(s.dst, s.src, s.bytes);
    return;
  }
  const int parts = workers * parts_per_thread();
  std::atomic<int> next{0};
  auto body = [&] {
    for (int i = next++; i < parts; i = next++) copy_part(segments, total, i, parts);
  };
  run_on_threads(workers, body, copy_spin_us);
}

}  // namespace gpuconv::conv
