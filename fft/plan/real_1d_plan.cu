#include "real_1d_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "../device/shared_limit.hpp"
#include "../kernels/real_1d.cuh"
#include "device_table.hpp"
#include "dispatch.hpp"

namespace gpuconv::fft {

namespace {

void require_aligned(const void* p, const char* what) {
  if (p == nullptr) throw std::invalid_argument(std::string("real_1d_plan: ") + what + " is a null pointer");
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
    throw std::invalid_argument(std::string("real_1d_plan: ") + what + " is not 16-byte aligned");
}

// Blocks of `kernel` (its policy's threads and shared memory) the device holds at once.
template <typename policy, typename Kernel>
long long resident_blocks(Kernel kernel) {
  int device = 0, sms = 0, per_sm = 0;
  GPUCONV_CUDA(cudaGetDevice(&device));
  GPUCONV_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  GPUCONV_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, policy::block_threads,
                                                             policy::shared_memory_bytes));
  return (long long)std::max(per_sm, 1) * sms;
}

// Blocks to launch: one per group of rows, or for persistent kernels as many as fit on the
// device at once (they loop over the groups).
template <int n, bool inverse, bool staged = false, typename Kernel>
unsigned grid_size(Kernel kernel, long long batch) {
  using policy = real_1d_policy<n, inverse, staged>;
  allow_dynamic_shared(kernel, policy::shared_memory_bytes);
  const long long groups = (batch + policy::rows_per_block - 1) / policy::rows_per_block;
  if (!policy::persistent) {
    if (groups > 0x7fffffffLL) throw std::invalid_argument("real_1d_plan: batch " + std::to_string(batch) + " too large");
    return (unsigned)groups;
  }
  return (unsigned)std::min<long long>(groups, resident_blocks<policy>(kernel));
}

void require_length(int n) {
  if (!is_pow2(n) || n < real_1d_plan::min_length || n > real_1d_plan::max_length)
    throw std::invalid_argument("real_1d_plan: length " + std::to_string(n) + " is not a power of two in [4, 4096]");
}

}  // namespace

std::vector<complex_t<float>> real_1d_plan::twiddles(int n, bool inverse) {
  require_length(n);
  auto table = twiddle_table<float>(n);
  dispatch_pow2<4>(n, [&](auto len) {
    constexpr int nn = decltype(len)::value;
    auto append = [&](auto direction) {
      constexpr bool inv = decltype(direction)::value;
      if constexpr (real_1d_policy<nn, inv>::threads_per_row > 1) {
        using passes = typename block_rows_t<nn, inv>::passes_t;
        passes::append_pass_tables(table);
        if (table.size() != std::size_t(passes::pass_table_offset(nn / 2)))
          throw std::logic_error("real_1d_plan: twiddle table length");
      }
    };
    if (inverse) {
      append(std::true_type{});
    } else {
      append(std::false_type{});
    }
  });
  return table;
}

real_1d_plan::real_1d_plan(int n, long long batch) : n_(n), batch_(batch) {
  require_length(n);
  if (batch < 1) throw std::invalid_argument("real_1d_plan: batch " + std::to_string(batch) + " is < 1");
  const long long max_blocks = 0x7fffffffLL;
  if (batch / 2 > max_blocks) throw std::invalid_argument("real_1d_plan: batch " + std::to_string(batch) + " too large");
  // C2R reads its own table where its passes differ from R2C's (real_1d_policy::flat)
  const auto forward_table = twiddles(n), inverse_table = twiddles(n, true);
  const bool same = std::equal(forward_table.begin(), forward_table.end(), inverse_table.begin(), inverse_table.end(),
                               [](complex_t<float> a, complex_t<float> b) { return a.re == b.re && a.im == b.im; });
  table_ = device_table_of(forward_table);
  if (!same) inverse_table_ = device_table_of(inverse_table);
  dispatch_pow2<4>(n, [&](auto len) {
    constexpr int nn = decltype(len)::value;
    r2c_grid_ = grid_size<nn, false>(r2c_1d_kernel<nn>, batch);
    c2r_grid_ = grid_size<nn, true>(c2r_1d_kernel<nn>, batch);
    if constexpr (has_staged_c2r<nn>) {
      static_assert(std::is_same_v<typename block_rows_t<nn, true>::passes_t, typename block_rows_t<nn, true, true>::passes_t>,
                    "real_1d_plan: the staged C2R kernel reads the flat one's twiddle table");
      // a flat grid of at most one wave: the staged kernel (real_1d_policy.hpp)
      if (c2r_grid_ <= resident_blocks<real_1d_policy<nn, true>>(c2r_1d_kernel<nn>)) {
        c2r_staged_ = true;
        c2r_grid_ = grid_size<nn, true, true>(c2r_1d_kernel<nn, true>, batch);
      }
    }
  });
}

void real_1d_plan::forward(const float* in, complex_t<float>* out, cudaStream_t stream, bool early) const {
  require_aligned(in, "input");
  require_aligned(out, "output");
  dispatch_pow2<4>(n_, [&](auto len) {
    constexpr int nn = decltype(len)::value;
    launch_maybe_early(r2c_1d_kernel<nn>, r2c_grid_, real_1d_policy<nn>::block_threads,
                       real_1d_policy<nn>::shared_memory_bytes, stream, early,
                       "r2c_1d_kernel", in, out, batch_, table_.data());
  });
}

void real_1d_plan::inverse(const complex_t<float>* in, float* out, cudaStream_t stream, bool early) const {
  require_aligned(in, "input");
  require_aligned(out, "output");
  dispatch_pow2<4>(n_, [&](auto len) {
    constexpr int nn = decltype(len)::value;
    auto launch = [&](auto staged) {
      constexpr bool s = decltype(staged)::value;
      using policy = real_1d_policy<nn, true, s>;
      launch_maybe_early(c2r_1d_kernel<nn, s>, c2r_grid_, policy::block_threads, policy::shared_memory_bytes, stream,
                         early, "c2r_1d_kernel", in, out, batch_,
                         inverse_table_.size() ? inverse_table_.data() : table_.data());
    };
    if constexpr (has_staged_c2r<nn>) {
      if (c2r_staged_) return launch(std::true_type{});
    }
    launch(std::false_type{});
  });
}

}  // namespace gpuconv::fft
