#include "atomic_write.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include <opencv2/imgcodecs.hpp>

#include "errors.hpp"
#include "interrupt.hpp"

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

constexpr const char* temp_marker = ".gpuconv-tmp-";

std::string errno_text(int e) { return std::strerror(e); }

// Best effort: makes the rename durable.
void fsync_directory(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// GPUCONV_FSYNC=0 leaves out the fsync calls (measurements only: what durability costs).
bool fsync_outputs() {
  static const bool on = [] {
    const char* e = std::getenv("GPUCONV_FSYNC");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

// the directory an output (and its temp file) goes into
fs::path output_directory(const fs::path& out) { return out.has_parent_path() ? out.parent_path() : fs::path("."); }

}  // namespace

directory_syncs::directory_syncs(std::chrono::milliseconds period, std::size_t renames)
    : last_(std::chrono::steady_clock::now()), period_(period), renames_(renames) {}

void directory_syncs::renamed(const fs::path& dir) {
  bool due;
  {
    std::lock_guard lock(mutex_);
    pending_.insert(dir);
    ++count_;
    due = count_ >= renames_ || std::chrono::steady_clock::now() - last_ >= period_;
  }
  if (due) sync();
}

void directory_syncs::sync() {
  // one syncing thread at a time: the entries noted before it took the set are durable when it returns
  std::lock_guard syncing(sync_mutex_);
  std::set<fs::path> dirs;
  {
    std::lock_guard lock(mutex_);
    dirs.swap(pending_);
    count_ = 0;
    last_ = std::chrono::steady_clock::now();
  }
  for (const fs::path& d : dirs) {
    if (fsync_outputs()) fsync_directory(d);
    ++synced_;
  }
}

bool share_directory_syncs() {
  static const bool on = [] {
    const char* e = std::getenv("GPUCONV_DIR_FSYNC");
    return !(e && std::string(e) == "each");
  }();
  return on;
}

bool is_temp_name(const fs::path& file) { return file.filename().string().find(temp_marker) != std::string::npos; }

void write_image_atomic(const fs::path& out, const cv::Mat& image, bool overwrite, const std::vector<int>& params) {
  const std::string name = "output '" + out.string() + "'";
  if (!overwrite && fs::exists(fs::symlink_status(out)))
    throw output_error(name + ": exists (use --overwrite or --skip-existing)");
  // Encode in memory, then write the bytes ourselves: cv::imwrite's encoders write through
  // stdio and do not all check the result (a full disk or a file-size limit could leave a
  // short file that imwrite reports as written); write(2) reports ENOSPC / EFBIG / EROFS.
  std::vector<uchar> bytes;
  try {
    if (!cv::imencode(out.extension().string(), image, bytes, params))
      throw output_error(name + ": OpenCV could not encode it as '" + out.extension().string() + "'");
  } catch (const cv::Exception& e) {
    throw output_error(name + ": cannot be encoded (" + e.err + ")");
  }
  write_bytes_atomic(out, bytes, overwrite);
}

void write_bytes_atomic(const fs::path& out, const std::vector<unsigned char>& bytes, bool overwrite,
                        bool despite_interrupt, directory_syncs* dirs) {
  write_spans_atomic(out, {{bytes.data(), bytes.size()}}, overwrite, despite_interrupt, dirs);
}

staged_output::staged_output(staged_output&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), temp_(std::exchange(o.temp_, {})), out_(std::move(o.out_)),
      overwrite_(o.overwrite_), despite_interrupt_(o.despite_interrupt_) {}

staged_output& staged_output::operator=(staged_output&& o) noexcept {
  if (this != &o) {
    drop();
    fd_ = std::exchange(o.fd_, -1);
    temp_ = std::exchange(o.temp_, {});
    out_ = std::move(o.out_);
    overwrite_ = o.overwrite_;
    despite_interrupt_ = o.despite_interrupt_;
  }
  return *this;
}

staged_output::~staged_output() { drop(); }

// an uncommitted temp file goes
void staged_output::drop() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

staged_output stage_output(const fs::path& out, const std::vector<byte_span>& spans, bool overwrite, bool despite_interrupt) {
  const auto stop = [&] { return interrupted() && !despite_interrupt; };
  static std::atomic<unsigned long> counter{0};
  const fs::path dir = output_directory(out);
  const fs::path temp = dir / ("." + out.filename().string() + temp_marker + std::to_string(::getpid()) + "-" +
                               std::to_string(counter++) + out.extension().string());
  const std::string name = "output '" + out.string() + "'";
  if (!overwrite && fs::exists(fs::symlink_status(out)))
    throw output_error(name + ": exists (use --overwrite or --skip-existing)");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw output_error(name + ": directory '" + dir.string() + "' does not exist");
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int e = errno;
    if (e == EACCES || e == EROFS || e == EPERM)
      throw output_error(name + ": directory '" + dir.string() + "' is not writable: " + errno_text(e));
    throw output_error(name + ": cannot create a file in '" + dir.string() + "': " + errno_text(e));
  }
  staged_output staged(fd, temp, out, overwrite, despite_interrupt);  // its destructor closes and removes the temp file
  std::size_t total = 0;
  for (const byte_span& s : spans) total += s.bytes;
  // writev over the spans not yet written, at most IOV_MAX at a time, resumed after short writes
  std::size_t first = 0, skip = 0;  // spans[first] from byte `skip` on is the next to write
  std::vector<iovec> iov;
  while (first < spans.size()) {
    if (spans[first].bytes == skip) {
      ++first;
      skip = 0;
      continue;
    }
    iov.clear();
    for (std::size_t i = first; i < spans.size() && iov.size() < std::size_t(IOV_MAX); ++i) {
      const std::size_t from = i == first ? skip : 0;
      if (spans[i].bytes > from) iov.push_back({const_cast<unsigned char*>(spans[i].data) + from, spans[i].bytes - from});
    }
    const ssize_t n = ::writev(fd, iov.data(), int(iov.size()));
    if (n < 0 && errno == EINTR && !stop()) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      if (n < 0 && e == EINTR) throw output_error(name + ": interrupted before it was written");
      throw output_error(name + ": cannot be written (" + std::to_string(total) + " bytes): " + errno_text(e));
    }
    for (std::size_t left = std::size_t(n); left > 0;) {  // advance past the bytes written
      const std::size_t here = std::min(left, spans[first].bytes - skip);
      skip += here;
      left -= here;
      if (skip == spans[first].bytes) {
        ++first;
        skip = 0;
      }
    }
  }
  return staged;
}

void commit_output(staged_output& staged, directory_syncs* dirs) {
  if (staged.fd_ < 0) throw std::logic_error("commit_output: nothing staged");
  const fs::path& out = staged.out_;
  const std::string name = "output '" + out.string() + "'";
  const int fd = staged.fd_;
  staged.fd_ = -1;  // closed below on every path
  if (fsync_outputs() && ::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    throw output_error(name + ": fsync failed: " + errno_text(e));
  }
  if (::close(fd) != 0) throw output_error(name + ": cannot be written: " + errno_text(errno));
  if (interrupted() && !staged.despite_interrupt_) throw output_error(name + ": interrupted before it was written");

  const fs::path& temp = staged.temp_;
  if (staged.overwrite_) {
    if (::rename(temp.c_str(), out.c_str()) != 0)
      throw output_error(name + ": cannot be written: " + errno_text(errno));
  } else if (::link(temp.c_str(), out.c_str()) == 0) {
    ::unlink(temp.c_str());
  } else if (errno == EEXIST) {
    throw output_error(name + ": exists (use --overwrite or --skip-existing)");
  } else {
    // a file system without hard links: the exists() check above has to do
    if (fs::exists(fs::symlink_status(out))) throw output_error(name + ": exists (use --overwrite or --skip-existing)");
    if (::rename(temp.c_str(), out.c_str()) != 0)
      throw output_error(name + ": cannot be written: " + errno_text(errno));
  }
  staged.temp_.clear();  // moved onto its name: nothing to remove
  if (dirs)
    dirs->renamed(output_directory(out));
  else if (fsync_outputs())
    fsync_directory(output_directory(out));
}

void write_spans_atomic(const fs::path& out, const std::vector<byte_span>& spans, bool overwrite, bool despite_interrupt,
                        directory_syncs* dirs) {
  staged_output staged = stage_output(out, spans, overwrite, despite_interrupt);
  commit_output(staged, dirs);
}

}  // namespace gpuconv::app
