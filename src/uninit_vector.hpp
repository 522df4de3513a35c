// Sample buffers that are written in full right after resize() (a decoded image's planes, a
// TIFF stack read, a conversion, a download): an allocator whose value-initialisation leaves
// trivial elements uninitialised, so that resize() neither fills them with zeros nor faults their
// pages in on one thread first (a 1 GB volume: ~0.3 s on the H100 host); large buffers get
// transparent huge pages advised.
#pragma once
#ifdef __linux__
#include <sys/mman.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace gpuconv::app {

// Asks the kernel for transparent huge pages over the whole 2 MiB blocks of [data, data + bytes)
// before its first write (a no-op where they are off or always on, or off Linux): a fresh 36-150 MB
// image buffer otherwise takes a page fault per 4 KiB as it is first written.
// GPUCONV_NO_THP=1 skips the advice (for measurements: it was worth 0.25-0.36 -> 0.15 s on a
// 12 MP CPU run on the 2-core VM, with a rare 0.5-0.75 s stall when the kernel compacts memory).
inline void advise_huge_pages(void* data, std::size_t bytes) {
#ifdef __linux__
  constexpr std::uintptr_t huge = std::uintptr_t(2) << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(data) + huge - 1) & ~(huge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(huge - 1);
  if (end > begin && !std::getenv("GPUCONV_NO_THP")) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data, (void)bytes;
#endif
}

// The allocator: resize leaves new elements uninitialised (every plane or volume is written in
// full before it is read; a zero fill would be one more pass, ~150 MB for a 12 MP RGB image, and
// its page faults on one thread). Large buffers get huge pages (advise_huge_pages).
template <typename T>
struct uninitialized_allocator : std::allocator<T> {
  T* allocate(std::size_t n) {
    T* p = std::allocator<T>::allocate(n);
    if (n * sizeof(T) >= (std::size_t(4) << 20)) advise_huge_pages(p, n * sizeof(T));
    return p;
  }
  template <typename U>
  struct rebind {
    using other = uninitialized_allocator<U>;
  };
  uninitialized_allocator() = default;
  template <typename U>
  uninitialized_allocator(const uninitialized_allocator<U>&) noexcept {}
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0)
      ::new (static_cast<void*>(p)) U;
    else
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T>
using uninit_vector = std::vector<T, uninitialized_allocator<T>>;

}  // namespace gpuconv::app
