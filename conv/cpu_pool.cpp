// run_on_threads (cpu_pool.hpp): a pool of parked workers. Each call publishes its body and
// the number of workers wanted under the mutex and bumps a generation counter; worker w
// runs the body when w < wanted and the call is still open, and reports back. The caller
// closes the call once its own body has returned (every unit is taken by then) and waits
// only for the workers already inside: a small image does not wait for wake-ups. The pool is never destroyed: its workers
// sleep on the condition variable until the process ends, so no static destructor can race
// a call made during exit.
#include "cpu_pool.hpp"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace gpuconv::conv {

namespace {

class pool {
 public:
  // true if the pool ran the call; false if another call holds it
  bool run(int threads, void (*body)(void*), void* context) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    const int helpers = threads - 1;
    {
      std::lock_guard<std::mutex> lock(m_);
      while ((int)workers_.size() < helpers) {
        const int w = (int)workers_.size();
        workers_.emplace_back([this, w, start = generation_] { work(w, start); });
        workers_.back().detach();
      }
      body_ = body;
      context_ = context;
      wanted_ = helpers;
      open_ = true;
      ++generation_;
    }
    wake_.notify_all();
    body(context);
    std::unique_lock<std::mutex> lock(m_);
    open_ = false;  // workers not yet awake skip this call: its units are all taken
    done_.wait(lock, [&] { return running_ == 0; });
    return true;
  }

 private:
  // start: the generation before the call that created this worker (it runs that call too)
  void work(int w, std::uint64_t seen) {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (w >= wanted_ || !open_) continue;
      ++running_;
      auto* body = body_;
      void* context = context_;
      lock.unlock();
      body(context);
      lock.lock();
      if (--running_ == 0) done_.notify_one();
    }
  }

  std::mutex busy_;  // held by the call using the pool
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  void (*body_)(void*) = nullptr;
  void* context_ = nullptr;
  int wanted_ = 0, running_ = 0;  // running_: workers inside this call's body
  bool open_ = false;              // the call has not finished its own share yet
  std::uint64_t generation_ = 0;
};

}  // namespace

void run_on_threads(int threads, void (*body)(void*), void* context) {
  if (threads <= 1) {
    body(context);
    return;
  }
  static pool* const shared = new pool;  // never destroyed (file comment)
  if (shared->run(threads, body, context)) return;
  std::vector<std::thread> own;
  for (int w = 1; w < threads; ++w) own.emplace_back(body, context);
  body(context);
  for (auto& t : own) t.join();
}

}  // namespace gpuconv::conv
