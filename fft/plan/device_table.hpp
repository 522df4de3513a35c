// Device-side set-up shared by the GPU plans: the twiddle table (twiddle_table.hpp)
// uploaded once and owned by the plan, and the device's multiprocessor count for grids.
#pragma once
#include "../device/buffer.hpp"
#include "twiddle_table.hpp"

namespace gpuconv::fft {

inline device_buffer<complex_t<float>> device_table_of(const std::vector<complex_t<float>>& host) {
  device_buffer<complex_t<float>> table(host.size());
  upload(table.data(), host.data(), table.bytes());
  return table;
}

inline device_buffer<complex_t<float>> device_twiddle_table(int n) { return device_table_of(twiddle_table<float>(n)); }

// column_twiddle_table(n) on the device: the strided pass's table for length n
inline device_buffer<complex_t<float>> device_column_table(int n) { return device_table_of(column_twiddle_table<float>(n)); }

inline int current_device_sms() {
  int device = 0, sms = 0;
  GPUCONV_CUDA(cudaGetDevice(&device));
  GPUCONV_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace gpuconv::fft
