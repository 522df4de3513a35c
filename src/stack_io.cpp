// Multi-page TIFF stacks: reading through OpenCV, writing through a baseline TIFF encoder of
// our own (in memory, for write_bytes_atomic). See stack_io.hpp for the rules.
#include "stack_io.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include "atomic_write.hpp"
#include "errors.hpp"
#include "kernel_io.hpp"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tiff_stack_bytes writes samples in host order under a little-endian ('II') header"
#endif

namespace gpuconv::app {

namespace fs = std::filesystem;

bool is_tiff_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char h[4];
  if (!in.read(reinterpret_cast<char*>(h), 4)) return false;
  return (h[0] == 'I' && h[1] == 'I' && h[2] == 42 && h[3] == 0) || (h[0] == 'M' && h[1] == 'M' && h[2] == 0 && h[3] == 42);
}

namespace {

// OpenCV's imgcodecs reports TIFF read failures on std::cerr (imreadmulti's "can't read data",
// its logger's warnings); captured here for the one-line error. The stack commands read on
// one thread, while nothing else writes to std::cerr.
class cerr_capture {
 public:
  cerr_capture() : old_(std::cerr.rdbuf(text_.rdbuf())) {}
  ~cerr_capture() { std::cerr.rdbuf(old_); }
  cerr_capture(const cerr_capture&) = delete;
  cerr_capture& operator=(const cerr_capture&) = delete;
  std::string take() {
    std::string t = one_line(text_.str());
    text_.str("");
    return t;
  }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
};

// The decoders' words and OpenCV's, one line.
std::string messages(cerr_capture& cerr) {
  std::string said = take_decoder_messages();
  const std::string more = cerr.take();
  if (!said.empty() && !more.empty()) said += "; ";
  return said + more;
}

// The directory chain of a classic (32-bit) TIFF, walked by hand: the page count, and whether
// every directory and every strip or tile it points to lies inside the file. libtiff stops
// quietly at a directory past the end (a cut file then reads as fewer pages) and OpenCV may
// fill a missing strip; this says so instead. BigTIFF (version 43) is left to libtiff.
struct tiff_layout {
  int pages = 0;        // the directories the chain names, a damaged one included
  bool classic = false;
  std::string problem;  // empty: the chain and the data are whole
};

tiff_layout walk_tiff(const fs::path& file) {
  tiff_layout t;
  std::ifstream in(file, std::ios::binary);
  std::error_code ec;
  const std::uint64_t size = fs::file_size(file, ec);
  unsigned char h[8];
  if (ec || !in.read(reinterpret_cast<char*>(h), 8)) return t;
  const bool little = h[0] == 'I';
  auto u = [&](const unsigned char* p, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t(p[little ? i : n - 1 - i]) << (8 * i);
    return v;
  };
  if (u(h + 2, 2) != 42) return t;
  t.classic = true;
  auto read = [&](std::uint64_t at, unsigned char* out, std::size_t n) {
    in.clear();
    in.seekg(std::streamoff(at));
    return at + n <= size && bool(in.read(reinterpret_cast<char*>(out), std::streamsize(n)));
  };
  // The values of a SHORT or LONG entry (inline when they fit in 4 bytes).
  auto values = [&](const unsigned char* e, std::vector<std::uint64_t>& out) {
    const std::uint64_t type = u(e + 2, 2), count = u(e + 4, 4);
    const int bytes = type == 3 ? 2 : type == 4 ? 4 : 0;
    if (bytes == 0 || count > (1u << 24)) return false;
    std::vector<unsigned char> raw(std::size_t(count) * bytes);
    if (raw.size() <= 4)
      std::memcpy(raw.data(), e + 8, raw.size());
    else if (!read(u(e + 8, 4), raw.data(), raw.size()))
      return false;
    for (std::size_t i = 0; i < count; ++i) out.push_back(u(raw.data() + i * bytes, bytes));
    return true;
  };
  std::uint64_t ifd = u(h + 4, 4);
  std::vector<std::uint64_t> seen;
  while (ifd != 0) {
    ++t.pages;  // named by the chain, whole or not
    const std::string where = "directory " + std::to_string(t.pages) + " at byte " + std::to_string(ifd);
    if (std::find(seen.begin(), seen.end(), ifd) != seen.end() || seen.size() > 1000000) {
      t.problem = where + " repeats (a loop in the directory chain)";
      return t;
    }
    seen.push_back(ifd);
    unsigned char c[2];
    if (!read(ifd, c, 2)) {
      t.problem = where + " lies past the end of the file (" + std::to_string(size) + " bytes)";
      return t;
    }
    const std::uint64_t entries = u(c, 2);
    std::vector<unsigned char> d(std::size_t(entries) * 12 + 4);
    if (!read(ifd + 2, d.data(), d.size())) {
      t.problem = where + " runs past the end of the file (" + std::to_string(size) + " bytes)";
      return t;
    }
    std::vector<std::uint64_t> offsets, counts;
    for (std::uint64_t i = 0; i < entries; ++i) {
      const unsigned char* e = d.data() + i * 12;
      const std::uint64_t tag = u(e, 2);
      bool ok = true;
      if (tag == 273 || tag == 324) ok = values(e, offsets);  // StripOffsets, TileOffsets
      if (tag == 279 || tag == 325) ok = values(e, counts);   // StripByteCounts, TileByteCounts
      if (!ok) {
        t.problem = where + ": its strip table lies past the end of the file";
        return t;
      }
    }
    for (std::size_t i = 0; i < offsets.size() && i < counts.size(); ++i)
      if (offsets[i] + counts[i] > size) {
        t.problem = "page " + std::to_string(t.pages) + ": its data (bytes " + std::to_string(offsets[i]) + " to " +
                    std::to_string(offsets[i] + counts[i]) + ") runs past the end of the file (" +
                    std::to_string(size) + " bytes)";
        return t;
      }
    ifd = u(d.data() + entries * 12, 4);
  }
  return t;
}

}  // namespace

int tiff_page_count(const fs::path& file) {
  if (!is_tiff_file(file)) return 0;
  const tiff_layout t = walk_tiff(file);
  if (t.classic) return t.pages;
  std::size_t n = 0;  // BigTIFF: libtiff counts (no std::cerr capture here: batch decoders call this on many threads)
  try {
    n = cv::imcount(file.string(), cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception&) {
    n = 0;
  }
  (void)take_decoder_messages();  // libtiff's complaints are read_stack's to report
  return int(n);
}

bool is_stack_file(const fs::path& file) { return tiff_page_count(file) > 1; }

namespace {

// The validated pages of a stack and its shape (values left empty).
struct stack_pages {
  volume shape;
  std::vector<cv::Mat> mats;
};

stack_pages read_pages(const fs::path& file, const std::string& role) {
  const std::string name = role;
  check_before_decoding(file, name);
  if (!is_tiff_file(file)) throw input_error(name + ": not a TIFF file (stacks are multi-page TIFFs)");
  const tiff_layout layout = walk_tiff(file);
  if (!layout.problem.empty()) throw input_error(name + ": truncated or corrupt (" + layout.problem + ")");
  const int pages = tiff_page_count(file);
  if (pages < 1) throw input_error(name + ": cannot be read or decoded (no readable TIFF directory)");
  if (const auto size = peek_image_size(file);
      size && double(size->width) * double(size->height) * pages > double(max_image_pixels()))
    throw input_error(name + ": " + std::to_string(pages) + " pages of " + std::to_string(size->width) + " x " +
                      std::to_string(size->height) + ", more voxels than the limit of " +
                      std::to_string(max_image_pixels()) + " (GPUCONV_MAX_PIXELS)");
  std::vector<cv::Mat> mats;
  bool ok = false;
  (void)take_decoder_messages();
  std::string said;
  {
    cerr_capture cerr;
    try {
      ok = cv::imreadmulti(file.string(), mats, cv::IMREAD_UNCHANGED);
    } catch (const cv::Exception& e) {
      throw input_error(name + ": cannot be decoded (" + e.err + ")");
    }
    said = messages(cerr);
  }
  if (!ok || mats.empty())
    throw input_error(name + ": cannot be read or decoded (" +
                      (said.empty() ? std::string("unreadable, truncated or corrupt") : said) + ")");
  if (int(mats.size()) != pages)
    throw input_error(name + ": truncated or corrupt (" + std::to_string(mats.size()) + " of " +
                      std::to_string(pages) + " pages decoded" + (said.empty() ? "" : ": " + said) + ")");
  volume v;
  v.depth = pages;
  v.height = mats[0].rows;
  v.width = mats[0].cols;
  v.cv_depth = mats[0].depth();
  for (std::size_t z = 0; z < mats.size(); ++z) {
    const cv::Mat& m = mats[z];
    const std::string page = name + ", page " + std::to_string(z + 1) + " of " + std::to_string(pages);
    if (m.empty()) throw input_error(page + ": cannot be decoded");
    if (m.channels() != 1)
      throw input_error(page + ": " + std::to_string(m.channels()) +
                        " channels; a stack holds one gray channel per page (split the channels first)");
    if (m.depth() != CV_8U && m.depth() != CV_16U && m.depth() != CV_32F)
      throw input_error(page + ": " + depth_name(m.depth()) + " samples are not supported (8-bit, 16-bit, 32-bit float)");
    if (m.rows != v.height || m.cols != v.width)
      throw input_error(page + ": " + std::to_string(m.cols) + " x " + std::to_string(m.rows) + ", but page 1 is " +
                        std::to_string(v.width) + " x " + std::to_string(v.height) + " (all pages must be one size)");
    if (m.depth() != v.cv_depth)
      throw input_error(page + ": " + depth_name(m.depth()) + " samples, but page 1 has " + depth_name(v.cv_depth));
  }
  if (double(v.voxels()) > double(max_image_pixels()))
    throw input_error(name + ": " + std::to_string(v.width) + " x " + std::to_string(v.height) + " x " +
                      std::to_string(v.depth) + " voxels, more than the limit of " +
                      std::to_string(max_image_pixels()) + " (GPUCONV_MAX_PIXELS)");
  return {v, std::move(mats)};
}

}  // namespace

stored_volume read_stack_stored(const fs::path& file, const std::string& role) {
  stack_pages p = read_pages(file, role);
  stored_volume v;
  v.depth = p.shape.depth;
  v.height = p.shape.height;
  v.width = p.shape.width;
  v.cv_depth = p.shape.cv_depth;
  const std::size_t page_bytes = std::size_t(v.height * v.width) * CV_ELEM_SIZE(v.cv_depth);
  v.bytes.resize(page_bytes * std::size_t(v.depth));
  for (std::size_t z = 0; z < p.mats.size(); ++z) {
    cv::Mat view(int(v.height), int(v.width), v.cv_depth, v.bytes.data() + z * page_bytes);
    p.mats[z].copyTo(view);
    p.mats[z].release();  // the page's memory back as soon as it is copied
  }
  return v;
}

volume to_float(const stored_volume& s) {
  volume v;
  v.depth = s.depth;
  v.height = s.height;
  v.width = s.width;
  v.cv_depth = s.cv_depth;
  v.values.resize(std::size_t(v.voxels()));
  const std::size_t plane = std::size_t(v.height * v.width), page_bytes = plane * CV_ELEM_SIZE(s.cv_depth);
  for (long long z = 0; z < v.depth; ++z) {
    const cv::Mat page(int(v.height), int(v.width), s.cv_depth, const_cast<unsigned char*>(s.bytes.data()) + z * page_bytes);
    cv::Mat view(int(v.height), int(v.width), CV_32F, v.values.data() + z * plane);
    page.convertTo(view, CV_32F);  // stored units, no scaling; into the buffer in place
  }
  return v;
}

volume read_stack(const fs::path& file, const std::string& role) { return to_float(read_stack_stored(file, role)); }

namespace {

// Little-endian bytes into a growing buffer.
struct tiff_writer {
  std::vector<unsigned char>& out;
  void u16(std::uint32_t v) {
    out.push_back(static_cast<unsigned char>(v));
    out.push_back(static_cast<unsigned char>(v >> 8));
  }
  void u32(std::uint64_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
  }
  void put32(std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<unsigned char>(v >> (8 * i));
  }
  // One IFD entry whose single value fits in the entry (SHORT: 3, LONG: 4).
  void entry(std::uint32_t tag, std::uint32_t type, std::uint64_t value) {
    u16(tag);
    u16(type);
    u32(1);
    if (type == 3) {
      u16(std::uint32_t(value));
      u16(0);
    } else {
      u32(value);
    }
  }
};

}  // namespace

std::vector<unsigned char> tiff_stack_bytes(const std::vector<cv::Mat>& pages, const fs::path& file) {
  const std::string name = "output '" + file.string() + "'";
  if (pages.empty()) throw output_error(name + ": no pages to write");
  const cv::Mat& first = pages[0];
  const int depth = first.depth();
  if (first.channels() != 1 || (depth != CV_8U && depth != CV_16U && depth != CV_32F))
    throw output_error(name + ": stack pages must be one channel of 8-bit, 16-bit or 32-bit float samples");
  const std::uint64_t bytes_per_page = std::uint64_t(first.total()) * first.elemSize();
  constexpr int entries = 11;
  constexpr std::uint64_t ifd_bytes = 2 + 12 * entries + 4;
  const std::uint64_t total = 8 + pages.size() * (ifd_bytes + bytes_per_page + 1);
  if (total > 0xFFFFFFFFull)
    throw output_error(name + ": " + std::to_string(total) + " bytes, over the 4 GiB a classic TIFF can address");
  std::vector<unsigned char> bytes;
  bytes.reserve(std::size_t(total));
  tiff_writer w{bytes};
  bytes.insert(bytes.end(), {'I', 'I', 42, 0});
  std::size_t next_link = bytes.size();  // where the offset of the next IFD goes
  w.u32(0);
  const std::uint32_t bits = depth == CV_8U ? 8 : depth == CV_16U ? 16 : 32;
  const std::uint32_t format = depth == CV_32F ? 3 : 1;  // SampleFormat: IEEE float / unsigned integer
  for (const cv::Mat& m : pages) {
    if (m.rows != first.rows || m.cols != first.cols || m.type() != first.type())
      throw output_error(name + ": stack pages differ in size or type");
    if (bytes.size() % 2) bytes.push_back(0);  // IFDs start on a word boundary
    w.put32(next_link, bytes.size());
    const std::size_t data_at = bytes.size() + ifd_bytes;
    w.u16(entries);                     // entries in ascending tag order
    w.entry(256, 4, std::uint64_t(m.cols));  // ImageWidth
    w.entry(257, 4, std::uint64_t(m.rows));  // ImageLength
    w.entry(258, 3, bits);              // BitsPerSample
    w.entry(259, 3, 1);                 // Compression: none
    w.entry(262, 3, 1);                 // PhotometricInterpretation: BlackIsZero
    w.entry(273, 4, data_at);           // StripOffsets (one strip)
    w.entry(277, 3, 1);                 // SamplesPerPixel
    w.entry(278, 4, std::uint64_t(m.rows));  // RowsPerStrip
    w.entry(279, 4, bytes_per_page);    // StripByteCounts
    w.entry(284, 3, 1);                 // PlanarConfiguration: contiguous
    w.entry(339, 3, format);            // SampleFormat
    next_link = bytes.size();
    w.u32(0);                           // next IFD: patched by the next page, 0 after the last
    const std::size_t row_bytes = std::size_t(m.cols) * m.elemSize();
    for (int y = 0; y < m.rows; ++y) bytes.insert(bytes.end(), m.ptr<unsigned char>(y), m.ptr<unsigned char>(y) + row_bytes);
  }
  return bytes;
}

std::vector<cv::Mat> volume_pages(const volume& v, int cv_depth, double scale, double offset, long long& clipped) {
  const double top = cv_depth == CV_8U ? 255.0 : cv_depth == CV_16U ? 65535.0 : 0.0;
  const std::size_t plane = std::size_t(v.height * v.width);
  std::vector<cv::Mat> pages;
  clipped = 0;
  for (long long z = 0; z < v.depth; ++z) {
    const float* src = v.values.data() + std::size_t(z) * plane;
    const cv::Mat view(int(v.height), int(v.width), CV_32F, const_cast<float*>(src));
    cv::Mat page;
    view.convertTo(page, cv_depth, scale, offset);  // cvRound (half to even) and saturate_cast
    if (cv_depth != CV_32F)
      for (std::size_t i = 0; i < plane; ++i) {
        const double s = scale * src[i] + offset;
        clipped += !(s >= -0.5 && s < top + 0.5);
      }
    pages.push_back(std::move(page));
  }
  return pages;
}

void check_stack_output(const fs::path& file) {
  const std::string ext = to_lower(file.extension().string());
  if (ext != ".tif" && ext != ".tiff")
    throw usage_error("output '" + file.string() + "': a stack is written as a multi-page TIFF; use .tif or .tiff");
}

void write_stack_stored(const fs::path& file, const stored_volume& v) {
  std::vector<cv::Mat> pages;  // views of the samples, no copy
  const std::size_t page_bytes = std::size_t(v.height * v.width) * CV_ELEM_SIZE(v.cv_depth);
  for (long long z = 0; z < v.depth; ++z)
    pages.emplace_back(int(v.height), int(v.width), v.cv_depth, const_cast<unsigned char*>(v.bytes.data()) + z * page_bytes);
  write_bytes_atomic(file, tiff_stack_bytes(pages, file), true);
}

long long write_stack(const fs::path& file, const volume& v, int cv_depth, double scale, double offset) {
  long long clipped = 0;
  const std::vector<cv::Mat> pages = volume_pages(v, cv_depth, scale, offset, clipped);
  write_bytes_atomic(file, tiff_stack_bytes(pages, file), true);
  return clipped;
}

}  // namespace gpuconv::app
