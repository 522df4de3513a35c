#include "mat_pool.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include <opencv2/core.hpp>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "convolve_image.hpp"  // advise_huge_pages

namespace gpuconv::app {

namespace {

constexpr std::size_t pooled_from = std::size_t(1) << 20;  // smaller Mats: OpenCV's own allocator
constexpr std::size_t granule = std::size_t(2) << 20;      // mapped lengths: whole huge pages

std::size_t mapped_length(std::size_t bytes) { return (bytes + granule - 1) / granule * granule; }

class recycling_allocator final : public cv::MatAllocator {
 public:
  void set_cap(std::size_t keep_bytes) {
    std::lock_guard lock(mutex_);
    cap_ = keep_bytes;
  }

  mat_pool_stats stats() const {
    std::lock_guard lock(mutex_);
    mat_pool_stats s = stats_;
    s.kept_bytes = kept_bytes_;
    return s;
  }

  cv::UMatData* allocate(int dims, const int* sizes, int type, void* data0, std::size_t* step, cv::AccessFlag flags,
                         cv::UMatUsageFlags usage) const override {
    cv::MatAllocator* std_allocator = cv::Mat::getStdAllocator();
    std::size_t total = CV_ELEM_SIZE(type);
    for (int i = dims - 1; i >= 0; --i) total *= std::size_t(sizes[i]);
    if (data0 || total < pooled_from) return std_allocator->allocate(dims, sizes, type, data0, step, flags, usage);
    void* buffer = acquire(mapped_length(total));
    if (!buffer) return std_allocator->allocate(dims, sizes, type, data0, step, flags, usage);
    if (step) {  // dense rows, as OpenCV's own allocator lays them out
      std::size_t s = CV_ELEM_SIZE(type);
      for (int i = dims - 1; i >= 0; --i) {
        step[i] = s;
        s *= std::size_t(sizes[i]);
      }
    }
    auto* u = new cv::UMatData(this);
    u->data = u->origdata = static_cast<uchar*>(buffer);
    u->size = total;
    return u;
  }

  bool allocate(cv::UMatData* u, cv::AccessFlag, cv::UMatUsageFlags) const override { return u != nullptr; }

  void deallocate(cv::UMatData* u) const override {
    if (!u) return;
    CV_Assert(u->urefcount == 0 && u->refcount == 0);
    release(u->origdata);
    delete u;
  }

 private:
  // A kept buffer of `length` bytes, or one at most a quarter longer, else a new mapping.
  void* acquire(std::size_t length) const {
    std::unique_lock lock(mutex_);
    if (auto it = free_.lower_bound(length); it != free_.end() && it->first <= length + length / 4) {
      void* p = it->second;
      in_use_.emplace(p, it->first);
      kept_bytes_ -= it->first;
      free_.erase(it);
      ++stats_.reused;
      return p;
    }
    lock.unlock();
#ifdef __linux__
    void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    advise_huge_pages(p, length);
    lock.lock();
    in_use_.emplace(p, length);
    ++stats_.mapped;
    return p;
#else
    return nullptr;
#endif
  }

  void release(void* p) const {
    std::unique_lock lock(mutex_);
    const auto it = in_use_.find(p);
    CV_Assert(it != in_use_.end());
    const std::size_t length = it->second;
    in_use_.erase(it);
    if (kept_bytes_ + length <= cap_) {
      free_.emplace(length, p);
      kept_bytes_ += length;
      return;
    }
    ++stats_.released;
    lock.unlock();
#ifdef __linux__
    munmap(p, length);
#endif
  }

  mutable std::mutex mutex_;
  mutable std::multimap<std::size_t, void*> free_;  // kept buffers by mapped length
  mutable std::map<void*, std::size_t> in_use_;     // buffers held by Mats: their mapped lengths
  mutable std::size_t kept_bytes_ = 0;
  mutable mat_pool_stats stats_;
  std::size_t cap_ = 0;
};

recycling_allocator* pool = nullptr;  // never destroyed: Mats may outlive any scope
std::mutex install_mutex;

}  // namespace

void use_recycling_mat_allocator(std::size_t keep_bytes) {
#ifdef __linux__
  if (const char* e = std::getenv("GPUCONV_MAT_POOL"); e && std::strcmp(e, "0") == 0) return;
  std::lock_guard lock(install_mutex);
  if (!pool) pool = new recycling_allocator;
  pool->set_cap(keep_bytes);
  cv::Mat::setDefaultAllocator(pool);
#else
  (void)keep_bytes;
#endif
}

void use_opencv_mat_allocator() {
  std::lock_guard lock(install_mutex);
  cv::Mat::setDefaultAllocator(cv::Mat::getStdAllocator());  // Mats of the pool still return to it
}

mat_pool_stats mat_pool_statistics() {
  std::lock_guard lock(install_mutex);
  return pool ? pool->stats() : mat_pool_stats{};
}

}  // namespace gpuconv::app
