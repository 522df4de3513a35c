// gpu_deflate (png_deflate.hpp): the kernels and the one-thread code builder.
#include "png_deflate.hpp"

#include <algorithm>
#include <cub/device/device_scan.cuh>

#include "fft/device/cuda_check.hpp"
#include "grid.cuh"

namespace gpuconv::pipeline {

namespace {

constexpr int block = 256;
constexpr std::uint32_t adler_mod = 65521;
constexpr int max_bits = 15;      // deflate's longest literal/length and distance code
constexpr int max_cl_bits = 7;    // the code-length code's
constexpr int end_of_block = 256;

struct deflate_state {
  std::uint32_t lit_count[288];
  std::uint32_t dist_count[32];
  std::uint32_t lit_code[288];  // bit-reversed: written LSB first as the stream wants
  std::uint32_t lit_len[288];
  std::uint32_t dist_code[32];
  std::uint32_t dist_len[32];
  std::uint32_t header_end;  // bit position of the first token (after the zlib and block headers)
  std::uint32_t ok;          // 1: both codes complete, lengths within the limits
  unsigned long long total_bits;
  unsigned long long adler_a, adler_b;  // sum of the bytes, sum of (n - i) times byte i, each mod 65521 per block
};

__constant__ unsigned short length_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                               31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
__constant__ unsigned char length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                               2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};

// 3..258 -> the index of its length code (code 257 + index)
__device__ int length_index(int len) {
  if (len == 258) return 28;
  int k = 27;
  while (length_base[k] > len) --k;
  return k;
}

// The token that starts at position i, from its run of equal bytes [s, e): zlib's Z_RLE parse -
// the run's first byte a literal, then matches (distance 1) of 258 bytes, then the rest as one
// match when it has 3 bytes or more, else as literals. kind 0: inside a match; 1: a literal;
// 2: a match of `len` bytes.
struct token {
  int kind, len;
};
__device__ __forceinline__ token token_at(std::uint32_t i, std::uint32_t s, std::uint32_t e) {
  if (i == s) return {1, 0};
  const std::uint32_t k = i - s - 1, rem = e - s - 1, q = rem / 258, r = rem % 258;
  if (k < 258 * q) return k % 258 == 0 ? token{2, 258} : token{0, 0};
  if (r >= 3) return k == 258 * q ? token{2, int(r)} : token{0, 0};
  return {1, 0};
}

__device__ __forceinline__ unsigned grid_threads() { return gridDim.x * blockDim.x; }

__global__ void start_flags(const unsigned char* __restrict__ in, std::uint32_t n, std::uint32_t* __restrict__ flags) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += grid_threads())
    flags[i] = (i == 0 || in[i] != in[i - 1]) ? 1u : 0u;
}

// runs[r] = the start of run r; runs[run count] = n
__global__ void run_starts(const unsigned char* __restrict__ in, std::uint32_t n, const std::uint32_t* __restrict__ index,
                           std::uint32_t* __restrict__ runs) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += grid_threads()) {
    if (i == 0 || in[i] != in[i - 1]) runs[index[i] - 1] = i;
    if (i == n - 1) runs[index[i]] = n;
  }
}

// The symbols' counts and the Adler-32 sums
__global__ void count_symbols(const unsigned char* __restrict__ in, std::uint32_t n, const std::uint32_t* __restrict__ index,
                              const std::uint32_t* __restrict__ runs, deflate_state* st) {
  __shared__ std::uint32_t lit[286];
  __shared__ std::uint32_t matches;
  __shared__ unsigned long long sum_a, sum_b;
  for (int k = threadIdx.x; k < 286; k += blockDim.x) lit[k] = 0;
  if (threadIdx.x == 0) matches = 0, sum_a = 0, sum_b = 0;
  __syncthreads();
  unsigned long long a = 0, b = 0;
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += grid_threads()) {
    const std::uint32_t r = index[i] - 1;
    const token t = token_at(i, runs[r], runs[r + 1]);
    if (t.kind == 1) atomicAdd(&lit[in[i]], 1u);
    if (t.kind == 2) {
      atomicAdd(&lit[257 + length_index(t.len)], 1u);
      atomicAdd(&matches, 1u);
    }
    a += in[i];
    b += (unsigned long long)((n - i) % adler_mod) * in[i];
  }
  atomicAdd(&sum_a, a % adler_mod);
  atomicAdd(&sum_b, b % adler_mod);
  __syncthreads();
  for (int k = threadIdx.x; k < 286; k += blockDim.x)
    if (lit[k]) atomicAdd(&st->lit_count[k], lit[k]);
  if (threadIdx.x == 0) {
    if (matches) atomicAdd(&st->dist_count[0], matches);
    atomicAdd(&st->adler_a, sum_a % adler_mod);
    atomicAdd(&st->adler_b, sum_b % adler_mod);
  }
}

// ---- one thread: Huffman code lengths (limited), canonical codes, the block header ----------

// Code lengths for count[0..n) (n <= 288), at most `limit` bits, as zlib builds them: at
// least two symbols get a code (unused ones added with a count of 1), a Huffman tree by two
// queues, lengths over the limit cut back by zlib's overflow rule, then handed out again to
// the symbols by frequency. False where the result is not a complete prefix code.
// The builder's working arrays, in shared memory (as local arrays they made a 13.7 KB stack
// frame, which the driver would reserve for every thread the device can hold).
struct huffman_scratch {
  int sym[288];
  std::uint32_t f[288];
  unsigned long long weight[575];
  int parent[575], depth[575];
};

__device__ bool code_lengths(const std::uint32_t* count, int n, int limit, std::uint32_t* len, huffman_scratch& h) {
  int* sym = h.sym;
  std::uint32_t* f = h.f;
  int m = 0;
  for (int s = 0; s < n; ++s) {
    f[s] = count[s];
    len[s] = 0;
    if (f[s]) sym[m++] = s;
  }
  for (int s = 0; m < 2 && s < n; ++s)
    if (f[s] == 0) {
      f[s] = 1;
      sym[m++] = s;
    }
  // ascending frequency (then symbol): insertion sort, m <= 288
  for (int j = 1; j < m; ++j) {
    const int x = sym[j];
    int k = j - 1;
    while (k >= 0 && (f[sym[k]] > f[x] || (f[sym[k]] == f[x] && sym[k] > x))) {
      sym[k + 1] = sym[k];
      --k;
    }
    sym[k + 1] = x;
  }
  // leaves 0..m-1 (sorted), internal nodes m..2m-2 in the order made (ascending weight)
  unsigned long long* weight = h.weight;
  int* parent = h.parent;
  for (int j = 0; j < m; ++j) weight[j] = f[sym[j]];
  int leaf = 0, inner = m;
  for (int next = m; next < 2 * m - 1; ++next) {
    int pick[2];
    for (int& p : pick) {
      if (leaf < m && (inner >= next || weight[leaf] <= weight[inner])) p = leaf++;
      else p = inner++;
    }
    weight[next] = weight[pick[0]] + weight[pick[1]];
    parent[pick[0]] = parent[pick[1]] = next;
  }
  int* depth = h.depth;
  depth[2 * m - 2] = 0;
  for (int k = 2 * m - 3; k >= 0; --k) depth[k] = depth[parent[k]] + 1;
  int bl_count[16] = {0};
  bool over = false;
  for (int j = 0; j < m; ++j) {
    over = over || depth[j] > limit;
    ++bl_count[min(depth[j], limit)];
  }
  if (over) {
    // Leaves past the limit cut back to it leave the Kraft sum over 1 by `excess` units of
    // 2^-limit. As zlib's gen_bitlen: a leaf from the deepest level under the limit moves one
    // level down, and a leaf at the limit joins it there; each such move takes one unit off.
    long long excess = -(1ll << limit);
    for (int bits = 1; bits <= limit; ++bits) excess += (long long)bl_count[bits] << (limit - bits);
    while (excess > 0) {
      int bits = limit - 1;
      while (bits > 0 && bl_count[bits] == 0) --bits;
      if (bits == 0) return false;
      --bl_count[bits];
      bl_count[bits + 1] += 2;
      --bl_count[limit];
      --excess;
    }
    // the longest codes to the least frequent symbols
    int j = 0;
    for (int bits = limit; bits >= 1; --bits)
      for (int c = 0; c < bl_count[bits]; ++c) depth[j++] = bits;
  }
  unsigned long long kraft = 0;
  for (int j = 0; j < m; ++j) {
    if (depth[j] < 1 || depth[j] > limit) return false;
    len[sym[j]] = std::uint32_t(depth[j]);
    kraft += 1ull << (limit - depth[j]);
  }
  return kraft == (1ull << limit);
}

// Canonical codes of the lengths, bit-reversed for LSB-first writing (RFC 1951, 3.2.2)
__device__ void canonical_codes(const std::uint32_t* len, int n, std::uint32_t* code) {
  int bl_count[16] = {0};
  for (int s = 0; s < n; ++s) ++bl_count[len[s]];
  bl_count[0] = 0;
  std::uint32_t next[16] = {0}, c = 0;
  for (int bits = 1; bits <= 15; ++bits) {
    c = (c + std::uint32_t(bl_count[bits - 1])) << 1;
    next[bits] = c;
  }
  for (int s = 0; s < n; ++s) {
    code[s] = 0;
    if (len[s]) code[s] = __brev(next[len[s]]++) >> (32 - len[s]);
  }
}

__device__ void put_bits(unsigned long long* words, unsigned long long& pos, unsigned long long v, int n) {
  const unsigned long long w = pos / 64, b = pos % 64;
  words[w] |= v << b;
  if (b + n > 64) words[w + 1] |= v >> (64 - b);
  pos += n;
}

__global__ void build_codes(deflate_state* st, unsigned long long* words) {
  __shared__ huffman_scratch h;
  __shared__ std::uint32_t lens[316];
  __shared__ unsigned char rle_sym[316], rle_extra[316];
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  st->lit_count[end_of_block] = 1;
  bool ok = code_lengths(st->lit_count, 286, max_bits, st->lit_len, h);
  ok = code_lengths(st->dist_count, 30, max_bits, st->dist_len, h) && ok;
  canonical_codes(st->lit_len, 286, st->lit_code);
  canonical_codes(st->dist_len, 30, st->dist_code);
  int hlit = 286, hdist = 30;
  while (hlit > 257 && st->lit_len[hlit - 1] == 0) --hlit;
  while (hdist > 1 && st->dist_len[hdist - 1] == 0) --hdist;
  // the code lengths, run-length coded (16: repeat the last 3-6 times, 17: 3-10 zeros, 18: 11-138 zeros)
  for (int s = 0; s < hlit; ++s) lens[s] = st->lit_len[s];
  for (int s = 0; s < hdist; ++s) lens[hlit + s] = st->dist_len[s];
  const int total = hlit + hdist;
  int rle = 0;
  for (int i = 0; i < total;) {
    const std::uint32_t l = lens[i];
    int run = 1;
    while (i + run < total && lens[i + run] == l) ++run;
    i += run;
    if (l == 0) {
      while (run >= 11) {
        const int k = min(run, 138);
        rle_sym[rle] = 18, rle_extra[rle++] = (unsigned char)(k - 11);
        run -= k;
      }
      if (run >= 3) {
        rle_sym[rle] = 17, rle_extra[rle++] = (unsigned char)(run - 3);
        run = 0;
      }
      while (run-- > 0) rle_sym[rle] = 0, rle_extra[rle++] = 0;
    } else {
      rle_sym[rle] = (unsigned char)l, rle_extra[rle++] = 0;
      --run;
      while (run >= 3) {
        const int k = min(run, 6);
        rle_sym[rle] = 16, rle_extra[rle++] = (unsigned char)(k - 3);
        run -= k;
      }
      while (run-- > 0) rle_sym[rle] = (unsigned char)l, rle_extra[rle++] = 0;
    }
  }
  std::uint32_t cl_count[19] = {0}, cl_len[19], cl_code[19];
  for (int k = 0; k < rle; ++k) ++cl_count[rle_sym[k]];
  ok = code_lengths(cl_count, 19, max_cl_bits, cl_len, h) && ok;
  canonical_codes(cl_len, 19, cl_code);
  const int order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  int hclen = 19;
  while (hclen > 4 && cl_len[order[hclen - 1]] == 0) --hclen;
  unsigned long long pos = 0;
  put_bits(words, pos, 0x0178, 16);  // zlib header: deflate, 32 K window, "fastest" (0x78 0x01)
  put_bits(words, pos, 1, 1);        // BFINAL: the last (and only) block
  put_bits(words, pos, 2, 2);        // BTYPE: dynamic Huffman codes
  put_bits(words, pos, hlit - 257, 5);
  put_bits(words, pos, hdist - 1, 5);
  put_bits(words, pos, hclen - 4, 4);
  for (int k = 0; k < hclen; ++k) put_bits(words, pos, cl_len[order[k]], 3);
  for (int k = 0; k < rle; ++k) {
    const int s = rle_sym[k];
    put_bits(words, pos, cl_code[s], int(cl_len[s]));
    if (s == 16) put_bits(words, pos, rle_extra[k], 2);
    if (s == 17) put_bits(words, pos, rle_extra[k], 3);
    if (s == 18) put_bits(words, pos, rle_extra[k], 7);
  }
  st->header_end = std::uint32_t(pos);
  st->ok = ok ? 1u : 0u;
}

// ---- the tokens' bits -------------------------------------------------------------------

__device__ __forceinline__ std::uint32_t token_bits(const token& t, unsigned char byte, const deflate_state* st) {
  if (t.kind == 1) return st->lit_len[byte];
  if (t.kind == 2) {
    const int k = length_index(t.len);
    return st->lit_len[257 + k] + length_extra[k] + st->dist_len[0];
  }
  return 0;
}

__global__ void measure_tokens(const unsigned char* __restrict__ in, std::uint32_t n, const std::uint32_t* __restrict__ index,
                               const std::uint32_t* __restrict__ runs, const deflate_state* __restrict__ st,
                               std::uint32_t* __restrict__ bits) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += grid_threads()) {
    const std::uint32_t r = index[i] - 1;
    bits[i] = token_bits(token_at(i, runs[r], runs[r + 1]), in[i], st);
  }
}

__device__ __forceinline__ void or_bits(unsigned long long* words, unsigned long long pos, unsigned long long v, int n) {
  const unsigned long long w = pos / 64, b = pos % 64;
  atomicOr(&words[w], v << b);
  if (b + n > 64) atomicOr(&words[w + 1], v >> (64 - b));
}

__global__ void write_tokens(const unsigned char* __restrict__ in, std::uint32_t n, const std::uint32_t* __restrict__ index,
                             const std::uint32_t* __restrict__ runs, const std::uint32_t* __restrict__ offsets,
                             deflate_state* st, unsigned long long* words) {
  const unsigned long long start = st->header_end;
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += grid_threads()) {
    const std::uint32_t r = index[i] - 1;
    const token t = token_at(i, runs[r], runs[r + 1]);
    const unsigned long long pos = start + offsets[i];
    std::uint32_t length = 0;
    if (t.kind == 1) {
      length = st->lit_len[in[i]];
      or_bits(words, pos, st->lit_code[in[i]], int(length));
    } else if (t.kind == 2) {
      const int k = length_index(t.len);
      const int l1 = int(st->lit_len[257 + k]), e = length_extra[k], l2 = int(st->dist_len[0]);
      const unsigned long long v = st->lit_code[257 + k] | ((unsigned long long)(t.len - length_base[k]) << l1) |
                                   ((unsigned long long)st->dist_code[0] << (l1 + e));
      length = std::uint32_t(l1 + e + l2);
      or_bits(words, pos, v, int(length));
    }
    if (i == n - 1) {  // the end-of-block code after the last token
      const unsigned long long end = pos + length;
      or_bits(words, end, st->lit_code[end_of_block], int(st->lit_len[end_of_block]));
      st->total_bits = end + st->lit_len[end_of_block];
    }
  }
}

}  // namespace

bool gpu_deflate::compress(const unsigned char* in, std::size_t n, cudaStream_t stream, std::size_t& bytes) {
  if (n == 0 || n > max_input) return false;
  const auto count = std::uint32_t(n);
  run_index_.reserve(n);
  runs_.reserve(n + 1);
  bits_.reserve(n);
  offsets_.reserve(n);
  // at most 15 bits a position (a literal; a match covers 3 or more), the headers, slack
  const std::size_t words = (15 * n + 16 + 5200) / 64 + 2;
  words_.reserve(words);
  state_.reserve(sizeof(deflate_state));
  auto* st = reinterpret_cast<deflate_state*>(state_.data());
  std::size_t temp = 0, temp2 = 0;
  GPUCONV_CUDA(cub::DeviceScan::InclusiveSum(nullptr, temp, bits_.data(), run_index_.data(), count, stream));
  GPUCONV_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp2, bits_.data(), offsets_.data(), count, stream));
  scan_temp_.reserve(std::max(temp, temp2));
  temp = temp2 = scan_temp_.size();

  GPUCONV_CUDA(cudaMemsetAsync(st, 0, sizeof(deflate_state), stream));
  GPUCONV_CUDA(cudaMemsetAsync(words_.data(), 0, words * sizeof(unsigned long long), stream));
  const unsigned grid = grid_for((long long)n, block, 132 * 16);  // (fewer blocks: fewer histogram merges)
  start_flags<<<grid, block, 0, stream>>>(in, count, bits_.data());
  check_launch("gpu_deflate::start_flags");
  GPUCONV_CUDA(cub::DeviceScan::InclusiveSum(scan_temp_.data(), temp, bits_.data(), run_index_.data(), count, stream));
  run_starts<<<grid, block, 0, stream>>>(in, count, run_index_.data(), runs_.data());
  check_launch("gpu_deflate::run_starts");
  count_symbols<<<grid, block, 0, stream>>>(in, count, run_index_.data(), runs_.data(), st);
  check_launch("gpu_deflate::count_symbols");
  build_codes<<<1, 32, 0, stream>>>(st, words_.data());
  check_launch("gpu_deflate::build_codes");
  measure_tokens<<<grid, block, 0, stream>>>(in, count, run_index_.data(), runs_.data(), st, bits_.data());
  check_launch("gpu_deflate::measure_tokens");
  GPUCONV_CUDA(cub::DeviceScan::ExclusiveSum(scan_temp_.data(), temp2, bits_.data(), offsets_.data(), count, stream));
  write_tokens<<<grid, block, 0, stream>>>(in, count, run_index_.data(), runs_.data(), offsets_.data(), st, words_.data());
  check_launch("gpu_deflate::write_tokens");

  struct results {
    std::uint32_t ok, pad;
    unsigned long long total_bits, adler_a, adler_b;
  };
  auto* r = static_cast<results*>(results_.reserve(sizeof(results)));
  GPUCONV_CUDA(cudaMemcpyAsync(&r->ok, &st->ok, sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream));
  GPUCONV_CUDA(cudaMemcpyAsync(&r->total_bits, &st->total_bits, 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
  GPUCONV_CUDA(cudaStreamSynchronize(stream));
  if (r->ok != 1) return false;
  const std::uint32_t a = std::uint32_t((1 + r->adler_a) % adler_mod);
  const std::uint32_t b = std::uint32_t((n % adler_mod + r->adler_b) % adler_mod);
  adler_ = (b << 16) | a;
  bytes = std::size_t((r->total_bits + 7) / 8) + 4;
  return true;
}

}  // namespace gpuconv::pipeline
