// zlib streams (RFC 1950 / 1951) made on the GPU, for PNG outputs: the encoder threads'
// deflate was a batch's largest CPU cost (a 1024^2 RGB image: 21.9 ms of zlib on a Zen 5 core,
// against 11-12 ms to inflate an input). The compression is OpenCV's default's (zlib level 1
// with Z_RLE: runs of one byte as matches at distance 1, the rest literals), parsed the same way
// (a run's first byte a literal, then matches of up to 258 bytes, a last piece under 3 bytes as
// literals), coded with one dynamic Huffman table for the whole stream (zlib: a table every
// 16 K symbols), so files come out within a few percent of zlib's size.
//
// Every position of the input is classified in parallel from its run (the start and end of its
// run of equal bytes: a scan of the run starts), the symbols are counted, one thread builds the
// length-limited Huffman codes and the block header, and every token writes its bits at its
// offset (a scan of the tokens' bit lengths). The Adler-32 check comes from per-block partial
// sums. A code that does not come out complete (a bug, never seen) is reported, and the caller
// deflates on the CPU instead.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "fft/device/buffer.hpp"

namespace gpuconv::pipeline {

class gpu_deflate {
 public:
  // The largest input taken (bytes; the tokens' bit offsets are 32-bit, at most 15 bits a
  // byte): beyond it the caller deflates on the CPU. Device memory taken: ~16.3 bytes a byte.
  static constexpr std::size_t max_input = std::size_t(1) << 28;

  // Device bytes run() needs for n input bytes (its buffers are kept for the next call), and
  // the largest input its buffers already hold.
  static std::size_t device_bytes(std::size_t n) { return 16 * n + (15 * n) / 8 + (std::size_t(1) << 20); }
  std::size_t held_input() const { return run_index_.size(); }

  // Compresses n (1..max_input) bytes at `in` (device memory) on `stream` into a zlib stream
  // (2-byte header, one deflate block, Adler-32), copied to `host` through `copy` (a function
  // (void* host, const unsigned char* device, size_t bytes) that waits for the copy). False
  // (and `host` untouched) where the code came out incomplete.
  template <typename Copy>
  bool run(const unsigned char* in, std::size_t n, cudaStream_t stream, std::vector<unsigned char>& host, Copy&& copy) {
    std::size_t bytes = 0;
    if (!compress(in, n, stream, bytes)) return false;
    host.resize(bytes);
    copy(host.data(), reinterpret_cast<const unsigned char*>(words_.data()), bytes - 4);
    for (int k = 0; k < 4; ++k) host[bytes - 4 + k] = (unsigned char)(adler_ >> (24 - 8 * k));
    return true;
  }

 private:
  // Leaves the zlib stream but its Adler-32 (adler_) in words_: bytes long with the check;
  // waits for the stream.
  bool compress(const unsigned char* in, std::size_t n, cudaStream_t stream, std::size_t& bytes);
  std::uint32_t adler_ = 0;

  device_buffer<std::uint32_t> run_index_, runs_, bits_, offsets_;
  device_buffer<unsigned long long> words_;  // the stream, written 64 bits at a time
  device_buffer<unsigned char> scan_temp_;
  device_buffer<unsigned char> state_;  // counts, code tables, header length, sums (png_deflate.cu)
  pinned_buffer results_;
};

}  // namespace gpuconv::pipeline
