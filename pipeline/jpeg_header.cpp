#include "jpeg_header.hpp"

#include <cstring>

namespace gpuconv::pipeline {

jpeg_header jpeg_headers(const unsigned char* d, std::size_t n) {
  jpeg_header h;
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8) return h;
  std::size_t pos = 2;
  std::size_t scan = 0;  // where the first scan's entropy-coded data starts
  for (int segments = 0; segments < 10000 && pos + 4 <= n; ++segments) {
    if (d[pos] != 0xFF) return h;
    const int marker = d[pos + 1];
    if (marker == 0xFF) {
      ++pos;
      continue;
    }
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {
      pos += 2;
      continue;
    }
    if (marker == 0xD9) return h;  // EOI before any scan
    const std::size_t length = std::size_t(d[pos + 2]) << 8 | d[pos + 3];
    if (length < 2 || pos + 2 + length > n) return h;
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC && h.sof < 0) {
      if (length < 8) return h;
      h.sof = marker;
      h.precision = d[pos + 4];
      h.height = int(d[pos + 5]) << 8 | d[pos + 6];
      h.width = int(d[pos + 7]) << 8 | d[pos + 8];
      h.components = d[pos + 9];
    }
    pos += 2 + length;
    if (marker == 0xDA) {
      scan = pos;
      break;
    }
  }
  if (!scan || h.sof < 0) return h;
  h.parsed = true;
  h.ends_with_eoi = n >= 2 && d[n - 2] == 0xFF && d[n - 1] == 0xD9;
  // In the entropy-coded data 0xFF is followed by 0x00 (a stuffed byte) or RSTn; a sequential
  // single-scan JPEG has no other marker before its EOI.
  const unsigned char* p = d + scan;
  const unsigned char* end = d + n - 2;
  while (p < end && (p = static_cast<const unsigned char*>(std::memchr(p, 0xFF, std::size_t(end - p))))) {
    const unsigned char next = p[1];
    if (next != 0x00 && !(next >= 0xD0 && next <= 0xD7) && next != 0xFF) {
      h.stray_marker = true;
      break;
    }
    p += next == 0xFF ? 1 : 2;  // 0xFF 0xFF: a fill byte before a marker
  }
  return h;
}

}  // namespace gpuconv::pipeline
