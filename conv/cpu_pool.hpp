// The CPU backend's threads: one process-wide pool of workers, started on first use and kept
// (parked on a condition variable between calls), so that a call pays a wake-up instead of a
// thread creation per worker. parallel_units (below) and the FFT method run on it.
// One call uses the pool at a time; a call made while another holds it (plans executed
// from several threads at once) starts its own threads as before, so that `threads` always
// means the same number of threads working on the call.
#pragma once
#include <algorithm>
#include <atomic>
#include <utility>

namespace gpuconv::conv {

// Runs body(context) on this thread and on up to threads - 1 workers, and returns when every
// run has returned. A worker that wakes after this thread's run has returned skips the call,
// so body must take its work from a shared counter until none is left (parallel_units), not
// rely on running `threads` times. body must not throw. spin_us > 0: the workers poll for the
// next call that many microseconds before they park, for callers that make calls in quick
// succession (cpu_pool.cpp's file comment; GPUCONV_POOL_SPIN_US overrides it for every call).
void run_on_threads(int threads, void (*body)(void*), void* context, int spin_us = 0);

template <typename F>
void run_on_threads(int threads, F& body, int spin_us = 0) {
  run_on_threads(threads, [](void* c) { (*static_cast<F*>(c))(); }, &body, spin_us);
}

// Runs f(unit) for unit < units on up to `threads` threads (this one included), the pool's.
// f must not throw.
template <typename F>
void parallel_units(int threads, long long units, F&& f) {
  std::atomic<long long> next{0};
  auto worker = [&] {
    for (long long u = next++; u < units; u = next++) f(u);
  };
  run_on_threads((int)std::min<long long>(std::max(threads, 1), units), worker);
}

// Units [0, total) handed out to `threads` threads in runs of consecutive units, each a
// 1 / (2 threads) share of what is left (at least one): long runs while there is much to do,
// single units at the end, so that the threads still finish together. For the FFT method's
// tiles: a thread's consecutive tiles share input rows (read again from its own caches) and
// the cache lines where one tile's output rows end and the next one's begin (with one tile a
// grab, those lines passed between the cores that wrote the two neighbours at the same time).
class guided_units {
 public:
  guided_units(long long total, int threads) : total_(total), share_(2LL * std::max(threads, 1)) {}
  // the next run [first, last); first == last once none is left
  std::pair<long long, long long> next() {
    long long first = next_.load(std::memory_order_relaxed);
    for (;;) {
      const long long left = total_ - first;
      if (left <= 0) return {total_, total_};
      const long long take = std::max<long long>(1, left / share_);
      if (next_.compare_exchange_weak(first, first + take, std::memory_order_relaxed)) return {first, first + take};
    }
  }

 private:
  const long long total_, share_;
  std::atomic<long long> next_{0};
};

}  // namespace gpuconv::conv
