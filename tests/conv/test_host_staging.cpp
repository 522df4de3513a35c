// host_staging: the page-locked staging behind plan3d::execute and Richardson-Lucy's run() on
// host buffers. Every byte of every part crosses to its place and back, for part lists that
// split across chunks and slots anywhere (more chunks than the three slots; parts of one
// byte; device parts out of order), from pageable and from page-locked host memory, on the
// legacy default stream and on a stream of its own.
#include <catch2/catch_test_macros.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "conv/host_staging.hpp"
#include "support/gpu.hpp"

using gpuconv::conv::host_staging;
using gpuconv::conv::host_transfer;

namespace {

struct host_bytes {  // pageable (std::vector) or page-locked (cudaMallocHost) host memory
  explicit host_bytes(std::size_t n, bool locked) : n(n), locked(locked) {
    if (locked) GPUCONV_CUDA(cudaMallocHost(reinterpret_cast<void**>(&p), n ? n : 1));
    else {
      v.resize(n ? n : 1);
      p = v.data();
    }
  }
  ~host_bytes() {
    if (locked) cudaFreeHost(p);
  }
  host_bytes(const host_bytes&) = delete;
  host_bytes& operator=(const host_bytes&) = delete;
  std::size_t n;
  bool locked;
  std::vector<std::uint8_t> v;
  std::uint8_t* p = nullptr;
};

}  // namespace

TEST_CASE("GPU host_staging moves every part's bytes to the device and back", "[gpu][conv][3d]") {
  GPUCONV_REQUIRE_GPU();
  const std::size_t mb = std::size_t(1) << 20;
  gpuconv::cuda_stream own;
  for (bool locked : {false, true})
    for (cudaStream_t stream : {cudaStream_t(nullptr), own.get()})
      for (const std::vector<std::size_t>& sizes : std::vector<std::vector<std::size_t>>{
               {1}, {4097}, {3 * mb + 5}, {41 * mb + 3}, {mb, 1, 7 * mb + 11, 0, 9 * mb, 2}, {17 * mb, 17 * mb + 1}}) {
        std::size_t total = 0;
        for (std::size_t s : sizes) total += s;
        host_bytes src(total, locked), back(total + sizes.size(), locked);
        for (std::size_t i = 0; i < total; ++i) src.p[i] = std::uint8_t(i * 131 + 7 + (i >> 16));
        std::memset(back.p, 0xEE, back.n);
        // device parts in reverse order with a 3-byte gap after each; host parts in order
        gpuconv::device_buffer<std::uint8_t> dev(total + 3 * sizes.size() + 1);
        GPUCONV_CUDA(cudaMemset(dev.data(), 0, dev.bytes()));
        // the memset runs on the legacy stream, which `own` (non-blocking) does not wait for: a
        // direct upload from page-locked memory could otherwise land under it (seen on the H200)
        GPUCONV_CUDA(cudaDeviceSynchronize());
        std::vector<std::size_t> dev_at(sizes.size());
        std::size_t at = 0;
        for (std::size_t j = sizes.size(); j-- > 0;) {
          dev_at[j] = at;
          at += sizes[j] + 3;
        }
        std::vector<host_transfer> up, down;
        at = 0;
        std::size_t out = 0;
        for (std::size_t j = 0; j < sizes.size(); ++j) {
          up.push_back({dev.data() + dev_at[j], src.p + at, sizes[j]});
          down.push_back({back.p + out, dev.data() + dev_at[j], sizes[j]});  // a 1-byte gap after each on the way back
          at += sizes[j];
          out += sizes[j] + 1;
        }
        host_staging staging(3);
        staging.upload(up, stream);
        staging.download(down, stream);
        // the device holds each part where it was sent, the gaps untouched
        std::vector<std::uint8_t> on_device(dev.size());
        GPUCONV_CUDA(cudaMemcpy(on_device.data(), dev.data(), dev.bytes(), cudaMemcpyDeviceToHost));
        bool same = true, gaps = true;
        at = out = 0;
        for (std::size_t j = 0; j < sizes.size(); ++j) {
          same = same && std::memcmp(on_device.data() + dev_at[j], src.p + at, sizes[j]) == 0;
          same = same && std::memcmp(back.p + out, src.p + at, sizes[j]) == 0;
          gaps = gaps && on_device[dev_at[j] + sizes[j]] == 0 && back.p[out + sizes[j]] == 0xEE;
          at += sizes[j];
          out += sizes[j] + 1;
        }
        INFO((locked ? "page-locked" : "pageable") << ", " << (stream ? "own stream" : "default stream") << ", "
                                                   << sizes.size() << " parts, " << total << " bytes");
        CHECK(same);
        CHECK(gaps);
      }
}

TEST_CASE("GPU host_staging keeps slots safe across calls of different sizes", "[gpu][conv][3d]") {
  GPUCONV_REQUIRE_GPU();
  // one object, growing and shrinking transfers back to back without a sync between them:
  // a slot reallocated (or reused) while an earlier DMA still reads it would show as wrong bytes
  host_staging staging(2);
  const std::size_t mb = std::size_t(1) << 20;
  for (std::size_t n : {std::size_t(100) * 1024, 30 * mb, 2 * mb + 1, 50 * mb}) {
    std::vector<std::uint8_t> src(n), back(n, 0);
    for (std::size_t i = 0; i < n; ++i) src[i] = std::uint8_t((i * 2654435761u) >> 13);
    gpuconv::device_buffer<std::uint8_t> dev(n);
    staging.upload(dev.data(), src.data(), n, nullptr);
    std::vector<std::uint8_t> changed = src;  // the source may change once upload returns
    std::memset(src.data(), 0, n);
    staging.download(back.data(), dev.data(), n, nullptr);
    INFO(n << " bytes");
    CHECK(back == changed);
  }
}
