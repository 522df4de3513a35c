#include "host_copy.hpp"

#include <algorithm>
#include <cstring>

namespace gpuconv::conv {

namespace {
// Below this a copy is not worth waking the threads for.
constexpr std::size_t min_bytes_per_thread = std::size_t(1) << 20;
}  // namespace

copy_pool::copy_pool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this, i] { worker(i); });
}

copy_pool::~copy_pool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : workers_) t.join();
}

// Copier `index` of `parts` copies bytes [total * index / parts, total * (index + 1) / parts)
// of the segments laid end to end.
void copy_pool::share(int index, int parts) {
  const std::size_t begin = job_bytes_ / parts * index + std::min<std::size_t>(index, job_bytes_ % parts);
  const std::size_t end = begin + job_bytes_ / parts + (std::size_t(index) < job_bytes_ % parts ? 1 : 0);
  std::size_t at = 0;
  for (const copy_segment& s : *job_) {
    const std::size_t lo = std::max(begin, at), hi = std::min(end, at + s.bytes);
    if (lo < hi)
      std::memcpy(static_cast<char*>(s.dst) + (lo - at), static_cast<const char*>(s.src) + (lo - at), hi - lo);
    at += s.bytes;
    if (at >= end) break;
  }
}

void copy_pool::copy(const std::vector<copy_segment>& segments) {
  std::size_t total = 0;
  for (const copy_segment& s : segments) total += s.bytes;
  const int parts = (int)std::min<std::size_t>(threads(), std::max<std::size_t>(1, total / min_bytes_per_thread));
  if (parts <= 1) {
    for (const copy_segment& s : segments) std::memcpy(s.dst, s.src, s.bytes);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &segments;
    job_bytes_ = total;
    parts_ = parts;
    pending_ = (int)workers_.size();  // every worker acknowledges (those beyond `parts` copy nothing)
    ++generation_;
  }
  start_.notify_all();
  share(0, parts);
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void copy_pool::worker(int index) {
  unsigned long long seen = 0;
  for (;;) {
    int parts;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      parts = parts_;
    }
    if (index < parts) share(index, parts);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --pending_;
    }
    finished_.notify_one();
  }
}

}  // namespace gpuconv::conv
