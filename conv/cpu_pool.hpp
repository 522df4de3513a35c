// The CPU backend's threads: one process-wide pool of workers, started on first use and kept
// (parked on a condition variable between calls), so that a call pays a wake-up instead of a
// thread creation per worker. parallel_units (below) and the FFT method run on it.
// One call uses the pool at a time; a call made while another holds it (plans executed
// from several threads at once) starts its own threads as before, so that `threads` always
// means the same number of threads working on the call.
#pragma once
#include <algorithm>
#include <atomic>

namespace gpuconv::conv {

// Runs body(context) on this thread and on up to threads - 1 workers, and returns when every
// run has returned. A worker that wakes after this thread's run has returned skips the call,
// so body must take its work from a shared counter until none is left (parallel_units), not
// rely on running `threads` times. body must not throw.
void run_on_threads(int threads, void (*body)(void*), void* context);

template <typename F>
void run_on_threads(int threads, F& body) {
  run_on_threads(threads, [](void* c) { (*static_cast<F*>(c))(); }, &body);
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

}  // namespace gpuconv::conv
