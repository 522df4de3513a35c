// A blocking queue of bounded size between the stages of a batch (src/batch.cpp): producers
// wait while it is full, consumers while it is empty; close() ends the consumers once drained.
// Full means `capacity` items, or, with a byte budget, `capacity` items and no room left in the
// budget for the next item's bytes (push's second argument): small items may then queue deeper
// than `capacity`, large ones no deeper.
#pragma once
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

namespace gpuconv::app {

template <typename T>
class bounded_queue {
 public:
  explicit bounded_queue(std::size_t capacity, std::size_t byte_budget = 0)
      : capacity_(std::max<std::size_t>(1, capacity)), budget_(byte_budget) {}

  void push(T item, std::size_t bytes = 0) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_ || (budget_ > 0 && bytes_ + bytes <= budget_); });
    items_.push_back(std::move(item));
    sizes_.push_back(bytes);
    bytes_ += bytes;
    not_empty_.notify_all();  // a decode stage may be waiting for a fuller batch beside a waiting consumer
  }

  std::size_t size() {
    std::lock_guard lock(mutex_);
    return items_.size();
  }

  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    drop_size();
    if (budget_ > 0)
      not_full_.notify_all();  // the room made may admit more than one waiting item
    else
      not_full_.notify_one();
    return item;
  }

  // Where a pop_up_to's time went (measurements: GPUCONV_BATCH_STATS), added to these.
  struct pop_timing {
    double lock = 0, empty = 0, patience = 0;  // seconds: taking the lock, waiting for one item, for more
    long long takes = 0, taken = 0;            // the calls that took items, and the items they took
    long long found = 0;                       // items queued when those calls had the lock
    pop_timing& operator+=(const pop_timing& o) {
      lock += o.lock, empty += o.empty, patience += o.patience;
      takes += o.takes, taken += o.taken, found += o.found;
      return *this;
    }
  };

  // Waits for one item, then for up to `most` items for at most `patience` (or until closed),
  // then takes up to `most` of those queued; empty only when closed and drained. The patience
  // wait lets go of the lock: another consumer may take the items meanwhile, and then this one
  // waits again (returning empty there, as it once did, ended a GPU decode stage mid-batch).
  std::vector<T> pop_up_to(std::size_t most, std::chrono::milliseconds patience = std::chrono::milliseconds(0),
                           pop_timing* timing = nullptr) {
    using clock = std::chrono::steady_clock;
    auto t = timing ? clock::now() : clock::time_point();
    auto lap = [&](double pop_timing::*part) {
      if (!timing) return;
      const auto now = clock::now();
      timing->*part += std::chrono::duration<double>(now - t).count();
      t = now;
    };
    std::unique_lock lock(mutex_);
    lap(&pop_timing::lock);
    const std::size_t on_arrival = items_.size();
    do {
      not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
      lap(&pop_timing::empty);
      if (patience.count() > 0)
        not_empty_.wait_for(lock, patience, [&] { return items_.size() >= most || closed_; });
      lap(&pop_timing::patience);
    } while (items_.empty() && !closed_);
    std::vector<T> out;
    // Reserved: a vector copies, not moves, its items when it grows if their move may throw, and
    // cv::Mat's move is not noexcept (so neither is the batch's work item's): a batch of 8 JPEGs
    // was copied 7 times over (4 MB each, fresh pages), under the lock - H100 host, 12 MP photos:
    // ~20 ms a take, the three GPU decode stages idle a third of the time.
    out.reserve(std::min(most, items_.size()));
    while (!items_.empty() && out.size() < most) {
      out.push_back(std::move(items_.front()));
      items_.pop_front();
      drop_size();
    }
    if (timing && !out.empty()) {
      ++timing->takes;
      timing->taken += (long long)out.size();
      timing->found += (long long)on_arrival;
    }
    not_full_.notify_all();
    return out;
  }

  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
  }

 private:
  void drop_size() {
    bytes_ -= sizes_.front();
    sizes_.pop_front();
  }

  std::size_t capacity_, budget_;
  std::deque<T> items_;
  std::deque<std::size_t> sizes_;  // push's bytes, item by item
  std::size_t bytes_ = 0;          // their sum
  bool closed_ = false;
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
};

}  // namespace gpuconv::app
