// Multi-page TIFF stacks: reading uncompressed gray pages straight from their strips, anything
// else through OpenCV; writing through a baseline TIFF encoder of our own (atomically, from
// where the samples lie). See stack_io.hpp for the rules.
#include "stack_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <opencv2/imgcodecs.hpp>

#include "atomic_write.hpp"
#include "conv/cpu_pool.hpp"
#include "errors.hpp"
#include "kernel_io.hpp"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tiff_stack_bytes writes samples in host order under a little-endian ('II') header"
#endif

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

// f(z) for z in [0, count) on up to 16 of the CPU pool's threads (the CLI runs OpenCV
// single-threaded: apps/gpuconv/main.cpp): a stack's pages, read or converted.
template <typename F>
void for_each_page(long long count, F&& f) {
  conv::parallel_units((int)std::min(16u, std::max(1u, std::thread::hardware_concurrency())), count, f);
}

}  // namespace

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
// One directory's fields that decide whether read_raw_pages can read it (0: tag absent).
struct tiff_page {
  std::uint64_t width = 0, height = 0, bits = 0, compression = 0, photometric = 0, samples = 0, planar = 0,
                format = 0, rows_per_strip = 0, orientation = 0, fill_order = 0;
  bool tiled = false;
  std::vector<std::uint64_t> offsets, counts;  // the strips (or tiles)
};

struct tiff_layout {
  int pages = 0;        // the directories the chain names, a damaged one included
  bool classic = false;
  bool little = true;
  std::string problem;  // empty: the chain and the data are whole
  std::vector<tiff_page> dirs;  // each page's fields, where the chain is whole
};

tiff_layout walk_tiff(const fs::path& file) {
  tiff_layout t;
  std::ifstream in(file, std::ios::binary);
  std::error_code ec;
  const std::uint64_t size = fs::file_size(file, ec);
  unsigned char h[8];
  if (ec || !in.read(reinterpret_cast<char*>(h), 8)) return t;
  const bool little = h[0] == 'I';
  t.little = little;
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
    tiff_page page;
    std::vector<std::uint64_t>& offsets = page.offsets;
    std::vector<std::uint64_t>& counts = page.counts;
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
      page.tiled = page.tiled || tag == 324 || tag == 325 || tag == 322 || tag == 323;
      std::uint64_t* field = tag == 256 ? &page.width : tag == 257 ? &page.height : tag == 258 ? &page.bits
                           : tag == 259 ? &page.compression : tag == 262 ? &page.photometric
                           : tag == 277 ? &page.samples : tag == 278 ? &page.rows_per_strip
                           : tag == 284 ? &page.planar : tag == 339 ? &page.format
                           : tag == 274 ? &page.orientation : tag == 266 ? &page.fill_order : nullptr;
      if (field) {  // one value (BitsPerSample may list one per sample: the first, and SamplesPerPixel decides)
        std::vector<std::uint64_t> v;
        if (values(e, v) && !v.empty()) *field = v[0];
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
    t.dirs.push_back(std::move(page));
  }
  return t;
}

// The samples' type of a page read_raw_pages can copy as stored (CV_8U, CV_16U, CV_32F), or -1:
// uncompressed strips of one gray sample, BlackIsZero, no orientation or fill order other than
// the default, every strip whole rows of exactly its bytes. Anything else is OpenCV's to decode.
int raw_page_depth(const tiff_page& p) {
  if (p.tiled || p.compression != 1 || p.photometric != 1 || !(p.samples <= 1) || !(p.planar <= 1) ||
      !(p.orientation <= 1) || !(p.fill_order <= 1) || p.width == 0 || p.height == 0)
    return -1;
  const int depth = p.bits == 8 && p.format <= 1 ? CV_8U : p.bits == 16 && p.format <= 1 ? CV_16U
                  : p.bits == 32 && p.format == 3 ? CV_32F : -1;
  if (depth < 0) return -1;
  const std::uint64_t rows = p.rows_per_strip == 0 || p.rows_per_strip > p.height ? p.height : p.rows_per_strip;
  const std::uint64_t strips = (p.height + rows - 1) / rows, row_bytes = p.width * (p.bits / 8);
  if (p.offsets.size() != strips || p.counts.size() != strips) return -1;
  for (std::uint64_t i = 0; i < strips; ++i)
    if (p.counts[i] != std::min(rows, p.height - i * rows) * row_bytes) return -1;
  return depth;
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

// The validated pages of a stack and its shape (values left empty), or the samples already
// read as stored (raw: read_raw_pages).
struct stack_pages {
  volume shape;
  std::vector<cv::Mat> mats;
  std::optional<stored_volume> raw;
};

// Pages that raw_page_depth accepts, all of one size and type: their strips read straight into
// one buffer (what libtiff would copy out of them, byte-swapped in place for a big-endian file -
// ImageJ's and Fiji's stacks are), without OpenCV's page-by-page decode and copies. Empty
// otherwise (OpenCV reads the stack).
std::optional<stored_volume> read_raw_pages(const fs::path& file, const tiff_layout& t) {
  if (!t.classic || t.dirs.empty() || int(t.dirs.size()) != t.pages) return std::nullopt;
  const tiff_page& first = t.dirs[0];
  const int depth = raw_page_depth(first);
  if (depth < 0) return std::nullopt;
  for (const tiff_page& p : t.dirs)
    if (raw_page_depth(p) != depth || p.width != first.width || p.height != first.height) return std::nullopt;
  stored_volume v;
  v.depth = t.pages;
  v.height = (long long)first.height;
  v.width = (long long)first.width;
  v.cv_depth = depth;
  const std::size_t page_bytes = std::size_t(first.width * first.height * (first.bits / 8));
  v.bytes.resize(page_bytes * std::size_t(v.depth));
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::atomic<bool> ok{true};
  for_each_page(v.depth, [&](long long z) {  // pages on several threads (copies out of the page cache)
    unsigned char* to = v.bytes.data() + std::size_t(z) * page_bytes;
    const tiff_page& p = t.dirs[std::size_t(z)];
    for (std::size_t i = 0; i < p.offsets.size() && ok; ++i) {
      for (std::uint64_t done = 0; done < p.counts[i];) {
        const ssize_t n = ::pread(fd, to + done, std::size_t(p.counts[i] - done), off_t(p.offsets[i] + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          ok = false;
          break;
        }
        done += std::uint64_t(n);
      }
      to += p.counts[i];
    }
    if (!t.little && ok) {  // the samples in host (little-endian) order
      unsigned char* page = v.bytes.data() + std::size_t(z) * page_bytes;
      if (p.bits == 16)
        for (std::size_t i = 0; i < page_bytes; i += 2) std::swap(page[i], page[i + 1]);
      else if (p.bits == 32)
        for (std::size_t i = 0; i < page_bytes; i += 4) {
          std::swap(page[i], page[i + 3]);
          std::swap(page[i + 1], page[i + 2]);
        }
    }
  });
  ::close(fd);
  if (!ok) return std::nullopt;  // OpenCV's read then reports the file in its words
  return v;
}

// The page count of a walked file: the classic chain's (walked already), else libtiff's.
int page_count(const tiff_layout& layout, const fs::path& file) {
  return layout.classic ? layout.pages : tiff_page_count(file);
}

stack_pages read_pages(const fs::path& file, const std::string& role) {
  const std::string name = role;
  check_before_decoding(file, name);
  if (!is_tiff_file(file)) throw input_error(name + ": not a TIFF file (stacks are multi-page TIFFs)");
  const tiff_layout layout = walk_tiff(file);
  if (!layout.problem.empty()) throw input_error(name + ": truncated or corrupt (" + layout.problem + ")");
  const int pages = page_count(layout, file);
  if (pages < 1) throw input_error(name + ": cannot be read or decoded (no readable TIFF directory)");
  if (const auto size = peek_image_size(file);
      size && double(size->width) * double(size->height) * pages > double(max_image_pixels()))
    throw input_error(name + ": " + std::to_string(pages) + " pages of " + std::to_string(size->width) + " x " +
                      std::to_string(size->height) + ", more voxels than the limit of " +
                      std::to_string(max_image_pixels()) + " (GPUCONV_MAX_PIXELS)");
  // the limit by the directories' own sizes too (peek_image_size may not have read the header)
  if (!layout.dirs.empty() &&
      double(layout.dirs[0].width) * double(layout.dirs[0].height) * pages > double(max_image_pixels()))
    throw input_error(name + ": " + std::to_string(pages) + " pages of " + std::to_string(layout.dirs[0].width) + " x " +
                      std::to_string(layout.dirs[0].height) + ", more voxels than the limit of " +
                      std::to_string(max_image_pixels()) + " (GPUCONV_MAX_PIXELS)");
  if (auto raw = read_raw_pages(file, layout)) {  // every page the first one's size
    stack_pages p;
    p.raw = std::move(raw);
    return p;
  }
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
  return {v, std::move(mats), std::nullopt};
}

}  // namespace

std::optional<stack_shape> peek_stack_shape(const fs::path& file) {
  if (!is_tiff_file(file)) return std::nullopt;
  const tiff_layout layout = walk_tiff(file);
  if (!layout.problem.empty()) return std::nullopt;
  const int pages = page_count(layout, file);
  if (pages < 1) return std::nullopt;
  if (!layout.dirs.empty() && layout.dirs[0].width && layout.dirs[0].height)
    return stack_shape{pages, (long long)layout.dirs[0].height, (long long)layout.dirs[0].width};
  if (const auto size = peek_image_size(file)) return stack_shape{pages, (long long)size->height, (long long)size->width};
  return std::nullopt;
}

bool stack_reads_raw(const fs::path& file) {
  if (!is_tiff_file(file)) return false;
  const tiff_layout t = walk_tiff(file);
  return t.problem.empty() && read_raw_pages(file, t).has_value();
}

stored_volume read_stack_stored(const fs::path& file, const std::string& role) {
  stack_pages p = read_pages(file, role);
  if (p.raw) return std::move(*p.raw);
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
  for_each_page(v.depth, [&](long long z) {
    const cv::Mat page(int(v.height), int(v.width), s.cv_depth,
                       const_cast<unsigned char*>(s.bytes.data()) + std::size_t(z) * page_bytes);
    cv::Mat view(int(v.height), int(v.width), CV_32F, v.values.data() + std::size_t(z) * plane);
    page.convertTo(view, CV_32F);  // stored units, no scaling; into the buffer in place
  });
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

namespace {

// The TIFF's own bytes (header, directories, the padding before each) in `meta`, and the
// file as spans in order: meta's pieces and each page's samples where they lie.
struct tiff_layout_out {
  std::vector<unsigned char> meta;
  std::vector<std::pair<std::size_t, std::size_t>> meta_pieces;  // (offset in meta, bytes), one before each page
  std::uint64_t page_bytes = 0;
};

tiff_layout_out tiff_stack_layout(const std::vector<cv::Mat>& pages, const std::string& name) {
  if (pages.empty()) throw output_error(name + ": no pages to write");
  const cv::Mat& first = pages[0];
  const int depth = first.depth();
  if (first.channels() != 1 || (depth != CV_8U && depth != CV_16U && depth != CV_32F))
    throw output_error(name + ": stack pages must be one channel of 8-bit, 16-bit or 32-bit float samples");
  tiff_layout_out t;
  t.page_bytes = std::uint64_t(first.total()) * first.elemSize();
  constexpr int entries = 11;
  constexpr std::uint64_t ifd_bytes = 2 + 12 * entries + 4;
  const std::uint64_t total = 8 + pages.size() * (ifd_bytes + t.page_bytes + 1);
  if (total > 0xFFFFFFFFull)
    throw output_error(name + ": " + std::to_string(total) + " bytes, over the 4 GiB a classic TIFF can address");
  std::vector<unsigned char>& bytes = t.meta;
  tiff_writer w{bytes};
  bytes.insert(bytes.end(), {'I', 'I', 42, 0});
  std::size_t next_link = bytes.size();  // where the offset of the next IFD goes
  w.u32(0);
  std::uint64_t at = bytes.size();       // the file offset meta's end stands for
  std::size_t piece = 0;                 // where in meta the current piece starts
  const std::uint32_t bits = depth == CV_8U ? 8 : depth == CV_16U ? 16 : 32;
  const std::uint32_t format = depth == CV_32F ? 3 : 1;  // SampleFormat: IEEE float / unsigned integer
  for (const cv::Mat& m : pages) {
    if (m.rows != first.rows || m.cols != first.cols || m.type() != first.type())
      throw output_error(name + ": stack pages differ in size or type");
    if (at % 2) {  // IFDs start on a word boundary
      bytes.push_back(0);
      ++at;
    }
    w.put32(next_link, at);
    const std::uint64_t data_at = at + ifd_bytes;
    const std::size_t before = bytes.size();
    w.u16(entries);                     // entries in ascending tag order
    w.entry(256, 4, std::uint64_t(m.cols));  // ImageWidth
    w.entry(257, 4, std::uint64_t(m.rows));  // ImageLength
    w.entry(258, 3, bits);              // BitsPerSample
    w.entry(259, 3, 1);                 // Compression: none
    w.entry(262, 3, 1);                 // PhotometricInterpretation: BlackIsZero
    w.entry(273, 4, data_at);           // StripOffsets (one strip)
    w.entry(277, 3, 1);                 // SamplesPerPixel
    w.entry(278, 4, std::uint64_t(m.rows));  // RowsPerStrip
    w.entry(279, 4, t.page_bytes);      // StripByteCounts
    w.entry(284, 3, 1);                 // PlanarConfiguration: contiguous
    w.entry(339, 3, format);            // SampleFormat
    next_link = bytes.size();
    w.u32(0);                           // next IFD: patched by the next page, 0 after the last
    at += bytes.size() - before;
    t.meta_pieces.push_back({piece, bytes.size() - piece});
    piece = bytes.size();
    at += t.page_bytes;                 // the page's samples follow its directory
  }
  return t;
}

// Writes the layout's pieces and the pages' rows in order through `emit(data, bytes)`.
template <typename F>
void tiff_stack_emit(const tiff_layout_out& t, const std::vector<cv::Mat>& pages, F&& emit) {
  for (std::size_t p = 0; p < pages.size(); ++p) {
    emit(t.meta.data() + t.meta_pieces[p].first, t.meta_pieces[p].second);
    const cv::Mat& m = pages[p];
    if (m.isContinuous()) {
      emit(m.ptr<unsigned char>(0), std::size_t(t.page_bytes));
    } else {
      const std::size_t row_bytes = std::size_t(m.cols) * m.elemSize();
      for (int y = 0; y < m.rows; ++y) emit(m.ptr<unsigned char>(y), row_bytes);
    }
  }
}

}  // namespace

std::uint64_t write_tiff_pages(const fs::path& file, const std::vector<cv::Mat>& pages, bool overwrite) {
  const tiff_layout_out t = tiff_stack_layout(pages, "output '" + file.string() + "'");
  std::vector<byte_span> spans;
  std::uint64_t size = 0;
  tiff_stack_emit(t, pages, [&](const unsigned char* d, std::size_t n) {
    spans.push_back({d, n});
    size += n;
  });
  write_spans_atomic(file, spans, overwrite);
  return size;
}

std::vector<unsigned char> tiff_stack_bytes(const std::vector<cv::Mat>& pages, const fs::path& file) {
  const tiff_layout_out t = tiff_stack_layout(pages, "output '" + file.string() + "'");
  std::vector<unsigned char> bytes;
  bytes.reserve(t.meta.size() + pages.size() * std::size_t(t.page_bytes));
  tiff_stack_emit(t, pages, [&](const unsigned char* d, std::size_t n) { bytes.insert(bytes.end(), d, d + n); });
  return bytes;
}

std::vector<cv::Mat> volume_pages(const volume& v, int cv_depth, double scale, double offset, long long& clipped) {
  const double top = cv_depth == CV_8U ? 255.0 : cv_depth == CV_16U ? 65535.0 : 0.0;
  const std::size_t plane = std::size_t(v.height * v.width);
  std::vector<cv::Mat> pages(std::size_t(v.depth));
  std::vector<long long> clips(std::size_t(v.depth), 0);
  for_each_page(v.depth, [&](long long z) {
    const float* src = v.values.data() + std::size_t(z) * plane;
    const cv::Mat view(int(v.height), int(v.width), CV_32F, const_cast<float*>(src));
    if (cv_depth == CV_32F && scale == 1 && offset == 0) {  // the values themselves: no copy
      pages[z] = view;
      return;
    }
    view.convertTo(pages[z], cv_depth, scale, offset);  // cvRound (half to even) and saturate_cast
    if (cv_depth != CV_32F)
      for (std::size_t i = 0; i < plane; ++i) {
        const double s = scale * src[i] + offset;
        clips[z] += !(s >= -0.5 && s < top + 0.5);
      }
  });
  clipped = 0;
  for (long long c : clips) clipped += c;
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
  write_tiff_pages(file, pages);
}

long long write_stack(const fs::path& file, const volume& v, int cv_depth, double scale, double offset) {
  long long clipped = 0;
  const std::vector<cv::Mat> pages = volume_pages(v, cv_depth, scale, offset, clipped);
  write_tiff_pages(file, pages);
  return clipped;
}

}  // namespace gpuconv::app
