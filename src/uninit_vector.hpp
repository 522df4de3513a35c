// Vectors of samples that are written in full right after resize() (a TIFF read, a
// conversion, a download): an allocator whose value-initialisation leaves trivial elements
// uninitialised, so that resize() neither fills them with zeros nor faults their pages in on
// one thread first (a 1 GB volume: ~0.3 s on the H100 host); the pages are faulted in by the
// threads that write them.
#pragma once
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace gpuconv::app {

template <typename T>
struct uninit_allocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = uninit_allocator<U>;
  };
  uninit_allocator() = default;
  template <typename U>
  uninit_allocator(const uninit_allocator<U>&) noexcept {}
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) ::new (static_cast<void*>(p)) U;  // default-initialised
    else ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T>
using uninit_vector = std::vector<T, uninit_allocator<T>>;

}  // namespace gpuconv::app
