// Host buffers that start on a cache line (64 bytes). The CPU paths keep rows and planes a
// whole number of lines apart, so their 64-byte vector loads and stores stay inside one line
// each only where the buffer starts on one; std::vector's default allocator gives 16 bytes
// (glibc's large blocks start 16 bytes past a page), which splits every such access in two.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace gpuconv::fft::host {

template <typename T>
struct line_allocator {
  using value_type = T;
  static constexpr std::align_val_t line{64};
  line_allocator() = default;
  template <typename U>
  line_allocator(const line_allocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), line)); }
  void deallocate(T* p, std::size_t n) { ::operator delete(p, n * sizeof(T), line); }
  template <typename U>
  bool operator==(const line_allocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const line_allocator<U>&) const { return false; }
};

template <typename T>
using line_vector = std::vector<T, line_allocator<T>>;

}  // namespace gpuconv::fft::host
