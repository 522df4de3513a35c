// Image buffers recycled across the images of a batch. A 12 MP RGB photo decodes into 36 MB,
// above glibc's largest mmap threshold (32 MB): every cv::Mat of that size is a fresh mmap,
// 9000 page faults to fill and a munmap when freed, on each of the decoder threads at once.
// Those faults and the kernel's mm lock they take cost the batch ~2.5 s of system time over
// 240 photos and slow nvJPEG's set-up running beside them (its handles pin memory).
//
// use_recycling_mat_allocator() makes OpenCV allocate every Mat of 1 MB or more from a pool:
// a freed buffer is kept (up to a cap on the bytes kept) and handed to the next Mat of the same
// rounded size; new ones are mapped with huge pages advised (advise_huge_pages). Smaller Mats
// and buffers the pool does not keep behave as before. Buffers are never returned while a Mat
// holds them; Mats allocated before the call keep their own allocator.
// GPUCONV_MAT_POOL=0 leaves OpenCV's allocator in place (for measurements).
#pragma once
#include <cstddef>

namespace gpuconv::app {

// Installs the pool as OpenCV's default Mat allocator (thread-safe; the pool is made once).
// `keep_bytes`: the most bytes of freed buffers it keeps from now on.
void use_recycling_mat_allocator(std::size_t keep_bytes);
// OpenCV's own allocator again for new Mats (a peer measured as plain OpenCV).
void use_opencv_mat_allocator();

// What the pool has done so far (tests, GPUCONV_BATCH_STATS).
struct mat_pool_stats {
  long long mapped = 0;    // buffers mapped
  long long reused = 0;    // allocations served from kept buffers
  long long released = 0;  // freed buffers unmapped (over the cap)
  std::size_t kept_bytes = 0;
};
mat_pool_stats mat_pool_statistics();

}  // namespace gpuconv::app
