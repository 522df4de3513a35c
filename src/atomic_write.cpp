#include "atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include <opencv2/imgcodecs.hpp>

#include "errors.hpp"
#include "interrupt.hpp"

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

constexpr const char* temp_marker = ".gpuconv-tmp-";

std::string errno_text(int e) { return std::strerror(e); }

void fsync_path(const fs::path& p, bool directory) {
  const int fd = ::open(p.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) {
    if (directory) return;  // best effort
    throw output_error("'" + p.string() + "': cannot reopen the written file: " + errno_text(errno));
  }
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0 && !directory) throw output_error("'" + p.string() + "': fsync failed: " + errno_text(e));
}

// Removes the temp file unless released: every exit path but the successful move.
struct temp_guard {
  fs::path path;
  bool armed = true;
  ~temp_guard() {
    if (armed) ::unlink(path.c_str());
  }
};

}  // namespace

bool is_temp_name(const fs::path& file) { return file.filename().string().find(temp_marker) != std::string::npos; }

void write_image_atomic(const fs::path& out, const cv::Mat& image, bool overwrite, const std::vector<int>& params) {
  static std::atomic<unsigned long> counter{0};
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  const fs::path temp = dir / ("." + out.filename().string() + temp_marker + std::to_string(::getpid()) + "-" +
                               std::to_string(counter++) + out.extension().string());
  const std::string name = "output '" + out.string() + "'";
  if (!overwrite && fs::exists(fs::symlink_status(out)))
    throw output_error(name + ": exists (use --overwrite or --skip-existing)");

  temp_guard guard{temp};
  bool written = false;
  try {
    written = cv::imwrite(temp.string(), image, params);
  } catch (const cv::Exception& e) {
    throw output_error(name + ": cannot be encoded (" + e.err + ")");
  }
  std::error_code ec;
  if (!written || !fs::exists(temp, ec)) {
    if (!fs::is_directory(dir, ec)) throw output_error(name + ": directory '" + dir.string() + "' does not exist");
    if (::access(dir.c_str(), W_OK) != 0)
      throw output_error(name + ": directory '" + dir.string() + "' is not writable");
    throw output_error(name + ": OpenCV could not encode or write it (format '" + out.extension().string() +
                       "' unsupported for this image?)");
  }
  fsync_path(temp, false);
  if (interrupted()) throw output_error(name + ": interrupted before it was written");

  if (overwrite) {
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
  guard.armed = false;
  fsync_path(dir, true);
}

}  // namespace gpuconv::app
