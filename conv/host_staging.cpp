#include "host_staging.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <utility>

#include "fft/device/cuda_check.hpp"
#include "host_copy.hpp"

namespace gpuconv::conv {

namespace {
// The most a slot holds: 8 MB chunks keep the first chunk's CPU copy and the last one's DMA
// (the two steps nothing overlaps) near 0.15 ms each at ~55 GB/s while a chunk's fixed costs
// (an event wait, a thread wake-up, one or a few cudaMemcpyAsync) stay small beside its bytes.
constexpr std::size_t max_slot_bytes = std::size_t(8) << 20;
constexpr std::size_t slot_align = std::size_t(64) << 10;
constexpr int slots = 3;
}  // namespace

int staging_threads(int plan_threads) {
  if (plan_threads > 0) return plan_threads;
  const char* e = std::getenv("GPUCONV_COPY_THREADS");
  return e && std::atoi(e) > 0 ? std::atoi(e) : std::min(16, (int)std::max(1u, std::thread::hardware_concurrency()));
}

// One slot's worth: pieces of the parts (host side, device side, offset in the slot), and
// the runs of them that are contiguous on the device side as well (one DMA each).
struct host_staging::chunk {
  struct piece {
    char* host;
    char* device;
    std::size_t offset, bytes;
  };
  std::vector<piece> pieces, runs;
};

host_staging::host_staging(int threads) : threads_(staging_threads(threads)) {}

bool host_staging::page_locked(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

char* host_staging::slot(int s) const { return static_cast<char*>(pinned_.data()) + std::size_t(s) * slot_bytes_; }

void host_staging::reserve_slots(std::size_t total) {
  const std::size_t want =
      std::min(max_slot_bytes, std::max(slot_align, (total / slots + slot_align - 1) / slot_align * slot_align));
  if (want <= slot_bytes_) return;
  for (int s = 0; s < slots; ++s)  // the old slots may still be read or written by a DMA
    if (pending_[s]) {
      GPUCONV_CUDA(cudaEventSynchronize(done_[s]));
      pending_[s] = false;
    }
  pinned_.reserve(want * slots);
  slot_bytes_ = want;
}

std::vector<host_staging::chunk> host_staging::chunks(const std::vector<host_transfer>& parts, bool host_is_src) const {
  std::vector<chunk> out;
  std::size_t used = slot_bytes_;  // bytes of the last chunk's slot in use
  for (const host_transfer& t : parts) {
    char* host = static_cast<char*>(host_is_src ? const_cast<void*>(t.src) : t.dst);
    char* device = static_cast<char*>(host_is_src ? t.dst : const_cast<void*>(t.src));
    for (std::size_t done = 0; done < t.bytes;) {
      if (used == slot_bytes_) {
        out.emplace_back();
        used = 0;
      }
      const std::size_t n = std::min(t.bytes - done, slot_bytes_ - used);
      chunk& c = out.back();
      const chunk::piece p{host + done, device + done, used, n};
      c.pieces.push_back(p);
      if (!c.runs.empty() && c.runs.back().device + c.runs.back().bytes == p.device)
        c.runs.back().bytes += n;
      else
        c.runs.push_back(p);
      used += n;
      done += n;
    }
  }
  return out;
}

namespace {
// The parts' bytes, and whether every host side (src for an upload, dst for a download) is
// page-locked so that the DMA can take it directly.
std::pair<std::size_t, bool> measure(const std::vector<host_transfer>& parts, bool host_is_src) {
  std::size_t total = 0;
  bool locked = true;
  for (const host_transfer& t : parts) {
    total += t.bytes;
    locked = locked && (t.bytes == 0 || host_staging::page_locked(host_is_src ? t.src : t.dst));
  }
  return {total, locked};
}
}  // namespace

void host_staging::upload(const std::vector<host_transfer>& parts, cudaStream_t stream) {
  const auto [total, direct] = measure(parts, true);
  if (total == 0) return;
  if (direct) {
    for (const host_transfer& t : parts)
      if (t.bytes) GPUCONV_CUDA(cudaMemcpyAsync(t.dst, t.src, t.bytes, cudaMemcpyHostToDevice, stream));
    return;
  }
  reserve_slots(total);
  const std::vector<chunk> cs = chunks(parts, true);
  std::vector<copy_segment> segs;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const int s = int(i % slots);
    if (pending_[s]) {  // the slot's previous DMA has read it
      GPUCONV_CUDA(cudaEventSynchronize(done_[s]));
      pending_[s] = false;
    }
    segs.clear();
    for (const chunk::piece& p : cs[i].pieces) segs.push_back({slot(s) + p.offset, p.host, p.bytes});
    parallel_copy(threads_, segs, staging_bytes_per_thread);
    for (const chunk::piece& r : cs[i].runs)
      GPUCONV_CUDA(cudaMemcpyAsync(r.device, slot(s) + r.offset, r.bytes, cudaMemcpyHostToDevice, stream));
    GPUCONV_CUDA(cudaEventRecord(done_[s], stream));
    pending_[s] = true;
  }
}

void host_staging::download(const std::vector<host_transfer>& parts, cudaStream_t stream) {
  const auto [total, direct] = measure(parts, false);
  if (total == 0) return;
  if (direct) {
    for (const host_transfer& t : parts)
      if (t.bytes) GPUCONV_CUDA(cudaMemcpyAsync(t.dst, t.src, t.bytes, cudaMemcpyDeviceToHost, stream));
    GPUCONV_CUDA(cudaStreamSynchronize(stream));
    return;
  }
  reserve_slots(total);
  const std::vector<chunk> cs = chunks(parts, false);
  auto issue = [&](std::size_t i) {  // chunk i's DMA into its slot
    const int s = int(i % slots);
    if (pending_[s]) {  // an upload's DMA may still read the slot
      GPUCONV_CUDA(cudaEventSynchronize(done_[s]));
      pending_[s] = false;
    }
    for (const chunk::piece& r : cs[i].runs)
      GPUCONV_CUDA(cudaMemcpyAsync(slot(s) + r.offset, r.device, r.bytes, cudaMemcpyDeviceToHost, stream));
    GPUCONV_CUDA(cudaEventRecord(done_[s], stream));
    pending_[s] = true;
  };
  for (std::size_t i = 0; i < std::min<std::size_t>(slots, cs.size()); ++i) issue(i);
  std::vector<copy_segment> segs;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const int s = int(i % slots);
    GPUCONV_CUDA(cudaEventSynchronize(done_[s]));
    pending_[s] = false;
    segs.clear();
    for (const chunk::piece& p : cs[i].pieces) segs.push_back({p.host, slot(s) + p.offset, p.bytes});
    parallel_copy(threads_, segs, staging_bytes_per_thread);
    if (i + slots < cs.size()) issue(i + slots);
  }
}

}  // namespace gpuconv::conv
