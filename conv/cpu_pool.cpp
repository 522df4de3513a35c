// run_on_threads (cpu_pool.hpp): a pool of parked workers. Each call publishes its body and
// the number of workers wanted under the mutex and bumps a generation counter; worker w
// runs the body when w < wanted and the call is still open, and reports back. The caller
// closes the call once its own body has returned (every unit is taken by then) and waits
// only for the workers already inside: a small image does not wait for wake-ups. The pool is never destroyed: its workers
// sleep on the condition variable until the process ends, so no static destructor can race
// a call made during exit.
// Where the workers wake: on the KVM guests measured (the 2-vCPU CI machine; see
// scripts/cpu-pool-wake-probe.cpp) the kernel often woke a parked worker on the CPU of the
// thread that woke it - the caller, busy with its own share - though the other CPUs were idle,
// and the worker then waited for the caller's time slice to end: after 20 ms idle the second of
// two threads started 3.8 ms into the call, on the caller's CPU, in 46 of 55 calls. So on Linux
// each call first narrows every worker it wants to one CPU of its own (the caller's allowed
// CPUs after the caller's, in turn), where the kernel must wake it, and each worker widens its
// affinity back to the caller's allowed CPUs as it starts (or skips) the call.
// Polling between calls: a call may ask its workers to poll for the next call for a while
// (spin_us) before they park, and its caller polls for its workers' end as long before it
// sleeps, so that calls in quick succession find the workers awake: no wake-up, no affinity
// change. The staging copies of plan::execute on host buffers ask for it (host_copy.cpp: one call
// a unit, ~0.2 ms a call beyond its bytes when the workers park between them, on the 16-vCPU
// hosts; docs/benchmarks.md, sessions 48-49); the CPU backend's own calls do not (no gain
// measured there). GPUCONV_POOL_SPIN_US=N (measurements) sets it for every call, 0 for none.
// The caller bumps the generation last, just before it lets go of the mutex, and a polling
// worker takes the mutex by try_lock, so neither sleeps on the other. On the 2-core machine the
// probe's back-to-back calls started their second thread 0.5-1.2 us in against 19-24 us.
#include "cpu_pool.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#ifdef __linux__
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace gpuconv::conv {

namespace {

#ifdef __linux__
// One CPU a worker for a call, and the set they return to.
struct placement {
  cpu_set_t allowed;      // the caller's
  std::vector<int> cpus;  // worker w -> cpus[w % size]: the allowed CPUs after the caller's, in turn
  bool make(int workers) {
    cpus.clear();
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
    const int here = sched_getcpu();
    for (int step = 1; step <= CPU_SETSIZE && (int)cpus.size() < workers; ++step) {
      const int c = ((here < 0 ? 0 : here) + step) % CPU_SETSIZE;
      if (CPU_ISSET(c, &allowed) && c != here) cpus.push_back(c);
    }
    return !cpus.empty();
  }
};

bool set_affinity(pid_t tid, const cpu_set_t& set) { return sched_setaffinity(tid, sizeof set, &set) == 0; }
#endif

// how long to poll after a call that asked for spin_us: GPUCONV_POOL_SPIN_US when set
std::chrono::microseconds spin_time(int spin_us) {
  static const int forced = [] {
    const char* e = std::getenv("GPUCONV_POOL_SPIN_US");
    return e && *e ? std::max(0, std::atoi(e)) : -1;
  }();
  return std::chrono::microseconds(forced >= 0 ? forced : std::max(0, spin_us));
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// polls done() for up to `time`; true once it held
template <typename F>
bool spin_until(std::chrono::microseconds time, F&& done) {
  const auto until = std::chrono::steady_clock::now() + time;
  for (int i = 0;; ++i) {
    if (done()) return true;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return false;
    cpu_relax();
  }
}

class pool {
 public:
  // true if the pool ran the call; false if another call holds it
  bool run(int threads, void (*body)(void*), void* context, int spin_us) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    const int helpers = threads - 1;
    {
      std::lock_guard<std::mutex> lock(m_);
      while ((int)workers_.size() < helpers) {
        const int w = (int)workers_.size();
        workers_.emplace_back();
        std::thread([this, w, start = generation_.load(std::memory_order_relaxed)] { work(w, start); }).detach();
      }
      body_ = body;
      context_ = context;
      wanted_ = helpers;
      open_ = true;
      spin_ = spin_time(spin_us);
#ifdef __linux__
      // workers that have parked once (their thread id known) wake on a CPU of their own; a
      // spinning one is awake already
      if (placement_.make(helpers))
        for (int w = 0; w < helpers; ++w) {
          worker& k = workers_[w];
          if (k.tid <= 0 || k.spinning) continue;
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(placement_.cpus[w % placement_.cpus.size()], &one);
          k.narrowed = set_affinity(k.tid, one) || k.narrowed;
        }
#endif
      generation_.fetch_add(1, std::memory_order_release);  // last: spinning workers start on it
    }
    wake_.notify_all();
    body(context);
    std::unique_lock<std::mutex> lock(m_);
    open_ = false;  // workers not yet awake skip this call: its units are all taken
    const auto spin = spin_;
    if (spin.count() > 0 && running_.load(std::memory_order_relaxed) != 0) {
      lock.unlock();  // the workers' last units end soon: poll instead of sleeping on done_
      spin_until(spin, [&] { return running_.load(std::memory_order_acquire) == 0; });
      lock.lock();
    }
    done_.wait(lock, [&] { return running_.load(std::memory_order_relaxed) == 0; });
    return true;
  }

 private:
  struct worker {
#ifdef __linux__
    pid_t tid = 0;
#endif
    bool narrowed = false;  // its affinity is one CPU, until it wakes
    bool spinning = false;  // polling for the next call (the last call's spin_), under m_
  };

  // start: the generation before the call that created this worker (it runs that call too)
  void work(int w, std::uint64_t seen) {
    std::unique_lock<std::mutex> lock(m_);
#ifdef __linux__
    workers_[w].tid = (pid_t)syscall(SYS_gettid);
#endif
    for (;;) {
      const auto spin = spin_;  // the last call's
      if (spin.count() > 0 && generation_.load(std::memory_order_relaxed) == seen) {
        workers_[w].spinning = true;
        lock.unlock();
        const bool called = spin_until(spin, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        // the caller bumps the generation just before it lets go of m_: take it without sleeping
        if (!called || !spin_until(spin, [&] { return lock.try_lock(); })) lock.lock();
        workers_[w].spinning = false;
      }
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      seen = generation_.load(std::memory_order_relaxed);
      const bool run = w < wanted_ && open_;
      if (run) ++running_;
      auto* body = body_;
      void* context = context_;
#ifdef __linux__
      const bool narrowed = workers_[w].narrowed;
      workers_[w].narrowed = false;
      const cpu_set_t allowed = placement_.allowed;
#endif
      lock.unlock();
#ifdef __linux__
      if (narrowed) set_affinity(0, allowed);  // back to the caller's CPUs (the kernel may move it again)
#endif
      if (run) body(context);
      lock.lock();
      if (run && --running_ == 0) done_.notify_one();
    }
  }

  std::mutex busy_;  // held by the call using the pool
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::deque<worker> workers_;  // each one's state (the threads are detached; a deque: never moved)
  void (*body_)(void*) = nullptr;
  void* context_ = nullptr;
  int wanted_ = 0;
  std::atomic<int> running_{0};  // workers inside this call's body (changed under m_)
  bool open_ = false;              // the call has not finished its own share yet
  std::chrono::microseconds spin_{0};  // how long this call's workers and caller poll, under m_
  std::atomic<std::uint64_t> generation_{0};  // changed under m_; spinning workers poll it
#ifdef __linux__
  placement placement_;  // this call's, under m_
#endif
};

}  // namespace

void run_on_threads(int threads, void (*body)(void*), void* context, int spin_us) {
  if (threads <= 1) {
    body(context);
    return;
  }
  static pool* const shared = new pool;  // never destroyed (file comment)
  if (shared->run(threads, body, context, spin_us)) return;
  std::vector<std::thread> own;
  for (int w = 1; w < threads; ++w) own.emplace_back(body, context);
  body(context);
  for (auto& t : own) t.join();
}

}  // namespace gpuconv::conv
