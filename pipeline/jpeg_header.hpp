// A JPEG's frame header and a cheap integrity scan, read without decoding: what decides
// whether the GPU's decoder (jpeg_gpu.hpp) takes a file or leaves it to the CPU's.
#pragma once
#include <cstddef>

namespace gpuconv::pipeline {

// What a JPEG's headers say, without decoding (jpeg_headers below).
struct jpeg_header {
  bool parsed = false;
  int width = 0, height = 0, components = 0, precision = 0;
  int sof = -1;             // the frame marker: 0xC0 baseline, 0xC1 extended, 0xC2 progressive, ...
  bool ends_with_eoi = false;
  bool stray_marker = false;  // a marker other than RSTn inside the entropy-coded data
  // true when the GPU decoder can take it: SOF0/SOF1, 8-bit, 3 components, EOI, no stray marker
  bool gpu_decodable() const {
    return parsed && (sof == 0xC0 || sof == 0xC1) && precision == 8 && components == 3 && ends_with_eoi &&
           !stray_marker && width > 0 && height > 0;
  }
};
jpeg_header jpeg_headers(const unsigned char* data, std::size_t size);

}  // namespace gpuconv::pipeline
