#include "jpeg_strips.hpp"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>

#include <opencv2/imgcodecs.hpp>

namespace gpuconv::app {

namespace {

constexpr int strip_mcu_rows_min = 8;  // strips of fewer MCU rows are not worth a thread
using bytes = std::vector<unsigned char>;

// Where one strip's stream keeps what the join needs.
struct layout {
  std::size_t height_at = 0;     // SOF: the frame height's two bytes
  std::size_t data_begin = 0;    // after the SOS segment: the entropy-coded data
  std::size_t data_end = 0;      // the final EOI marker
  int mcu_w = 0, mcu_h = 0;      // from the SOF's largest sampling factors
  int restart_interval = 0;      // DRI
};

int read16(const bytes& b, std::size_t at) { return (b[at] << 8) | b[at + 1]; }

// The headers of a baseline JPEG as libjpeg writes them (SOI, segments, SOS, data, EOI);
// nothing when the stream is laid out otherwise.
std::optional<layout> parse(const bytes& b) {
  if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8 || b[b.size() - 2] != 0xFF || b[b.size() - 1] != 0xD9)
    return std::nullopt;
  layout l;
  std::size_t at = 2;
  bool baseline = false;
  while (at + 4 <= b.size()) {
    if (b[at] != 0xFF) return std::nullopt;
    const int marker = b[at + 1];
    const std::size_t length = std::size_t(read16(b, at + 2));
    if (at + 2 + length > b.size()) return std::nullopt;
    if (marker == 0xC0) {  // SOF0: P, Y, X, Nf, then Nf x (C, HV, Tq)
      baseline = true;
      l.height_at = at + 5;
      const int components = b[at + 9];
      int hmax = 1, vmax = 1;
      for (int c = 0; c < components; ++c) {
        hmax = std::max(hmax, b[at + 11 + 3 * c] >> 4);
        vmax = std::max(vmax, b[at + 11 + 3 * c] & 15);
      }
      l.mcu_w = 8 * hmax;
      l.mcu_h = 8 * vmax;
    } else if ((marker & 0xF0) == 0xC0 && marker != 0xC4 && marker != 0xCC) {
      return std::nullopt;  // another frame type (progressive, arithmetic...)
    } else if (marker == 0xDD) {
      l.restart_interval = read16(b, at + 4);
    } else if (marker == 0xDA) {
      l.data_begin = at + 2 + length;
      l.data_end = b.size() - 2;
      return baseline ? std::optional<layout>(l) : std::nullopt;
    }
    at += 2 + length;
  }
  return std::nullopt;
}

// Appends the entropy-coded data [begin, end) of a strip whose first MCU row is the image's
// row `first_row`, its restart markers renumbered to follow the image's sequence.
void append_data(bytes& out, const bytes& b, std::size_t begin, std::size_t end, long long first_row) {
  for (std::size_t i = begin; i < end; ++i) {
    out.push_back(b[i]);
    if (b[i] == 0xFF && i + 1 < end && b[i + 1] >= 0xD0 && b[i + 1] <= 0xD7) {
      out.push_back(static_cast<unsigned char>(0xD0 + ((b[i + 1] - 0xD0 + first_row) & 7)));
      ++i;
    }
  }
}

}  // namespace

std::optional<bytes> encode_jpeg_strips(const cv::Mat& image, int quality, int threads) {
  if (image.depth() != CV_8U || (image.channels() != 1 && image.channels() != 3) || threads < 2) return std::nullopt;
  // libjpeg's MCU under OpenCV's defaults: 8 x 8 for gray, 16 x 16 for colour (4:2:0); checked
  // against the encoded frame below
  const int mcu = image.channels() == 1 ? 8 : 16;
  const int mcu_rows = (image.rows + mcu - 1) / mcu;
  const int strips = std::min(threads, mcu_rows / strip_mcu_rows_min);
  if (strips < 2) return std::nullopt;
  const int mcus_per_row = (image.cols + mcu - 1) / mcu;

  std::vector<bytes> encoded(strips);
  std::vector<int> first_row(strips + 1);
  for (int s = 0; s <= strips; ++s) first_row[s] = int((long long)mcu_rows * s / strips);
  std::vector<std::exception_ptr> errors(strips);
  const std::vector<int> params{cv::IMWRITE_JPEG_QUALITY, quality, cv::IMWRITE_JPEG_RST_INTERVAL, mcus_per_row};
  auto encode = [&](int s) {
    try {
      const int r0 = first_row[s] * mcu, r1 = std::min(image.rows, first_row[s + 1] * mcu);
      cv::imencode(".jpg", image.rowRange(r0, r1), encoded[s], params);
    } catch (...) {
      errors[s] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int s = 1; s < strips; ++s) pool.emplace_back(encode, s);
  encode(0);
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);

  std::vector<layout> parts;
  for (const bytes& b : encoded) {
    const auto l = parse(b);
    if (!l || l->mcu_w != mcu || l->mcu_h != mcu || l->restart_interval != mcus_per_row) return std::nullopt;
    parts.push_back(*l);
  }
  // every strip under the same tables: the headers equal but for the frame height
  const bytes& head = encoded[0];
  for (int s = 1; s < strips; ++s) {
    const bytes& b = encoded[s];
    if (parts[s].data_begin != parts[0].data_begin || parts[s].height_at != parts[0].height_at) return std::nullopt;
    for (std::size_t i = 0; i < parts[0].data_begin; ++i)
      if (b[i] != head[i] && i != parts[0].height_at && i != parts[0].height_at + 1) return std::nullopt;
  }

  std::size_t total = head.size();
  for (int s = 1; s < strips; ++s) total += parts[s].data_end - parts[s].data_begin + 2;
  bytes out;
  out.reserve(total);
  out.insert(out.end(), head.begin(), head.begin() + std::ptrdiff_t(parts[0].data_begin));
  out[parts[0].height_at] = static_cast<unsigned char>(image.rows >> 8);
  out[parts[0].height_at + 1] = static_cast<unsigned char>(image.rows & 0xFF);
  for (int s = 0; s < strips; ++s) {
    if (s > 0) {  // the restart marker before the strip's first MCU row
      out.push_back(0xFF);
      out.push_back(static_cast<unsigned char>(0xD0 + ((first_row[s] - 1) & 7)));
    }
    append_data(out, encoded[s], parts[s].data_begin, parts[s].data_end, first_row[s]);
  }
  out.push_back(0xFF);
  out.push_back(0xD9);
  return out;
}

}  // namespace gpuconv::app
