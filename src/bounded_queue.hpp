// A blocking queue of bounded size between the stages of a batch (src/batch.cpp): producers
// wait while it is full, consumers while it is empty; close() ends the consumers once drained.
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
  explicit bounded_queue(std::size_t capacity) : capacity_(std::max<std::size_t>(1, capacity)) {}

  void push(T item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    items_.push_back(std::move(item));
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
    not_full_.notify_one();
    return item;
  }

  // Waits for one item, then for up to `most` items for at most `patience` (or until closed),
  // then takes up to `most` of those queued; empty only when closed and drained. The patience
  // wait lets go of the lock: another consumer may take the items meanwhile, and then this one
  // waits again (returning empty there, as it once did, ended a GPU decode stage mid-batch).
  std::vector<T> pop_up_to(std::size_t most, std::chrono::milliseconds patience = std::chrono::milliseconds(0)) {
    std::unique_lock lock(mutex_);
    do {
      not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
      if (patience.count() > 0)
        not_empty_.wait_for(lock, patience, [&] { return items_.size() >= most || closed_; });
    } while (items_.empty() && !closed_);
    std::vector<T> out;
    while (!items_.empty() && out.size() < most) {
      out.push_back(std::move(items_.front()));
      items_.pop_front();
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
  std::size_t capacity_;
  std::deque<T> items_;
  bool closed_ = false;
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
};

}  // namespace gpuconv::app
