// Output files appear whole or not at all. The image is encoded in memory by cv::imencode
// (the codec picked by the extension) or by the GPU's JPEG encoder, written with write(2) into a temp file in the
// output's directory, `.NAME.gpuconv-tmp-PID-N.EXT`, every short or failed write reported
// with its errno (ENOSPC, EFBIG, EROFS, ...), fsync'ed, then moved onto the output name:
// rename(2) when overwriting is allowed, link(2) + unlink(2) otherwise, so that a file that
// appeared in the meantime is never replaced. On any failure, or when an interrupt arrived
// before the move, the temp file is removed and output_error is thrown.
#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>

namespace gpuconv::app {

// The directories whose new entries (the outputs' renames) are not yet synced, for writers that
// share the directory fsync: each output's bytes are still fsync'ed before its rename (a name
// never shows unsynced data), but the renames are made durable by one fsync of their directory
// for many outputs - every `period` or `renames` outputs, and by sync() before the batch
// reports them done - instead of a journal commit each. A crash in between can lose the names
// of outputs renamed since the last sync (never show a partial file under a name); the batch
// had not reported them done.
class directory_syncs {
 public:
  explicit directory_syncs(std::chrono::milliseconds period = std::chrono::milliseconds(500), std::size_t renames = 256);
  // Notes dir's new entry; syncs every noted directory when the period or count is reached.
  void renamed(const std::filesystem::path& dir);
  // Syncs every noted directory now.
  void sync();
  // Directory fsyncs made so far (with GPUCONV_FSYNC=0: the ones it would have made).
  std::size_t synced() const { return synced_; }

 private:
  std::mutex mutex_, sync_mutex_;
  std::set<std::filesystem::path> pending_;
  std::size_t count_ = 0;
  std::atomic<std::size_t> synced_{0};
  std::chrono::steady_clock::time_point last_;
  const std::chrono::milliseconds period_;
  const std::size_t renames_;
};
// Whether the batch's writers share directory syncs: yes, unless GPUCONV_DIR_FSYNC=each (one
// directory fsync an output, as the one-image command does; measurements).
bool share_directory_syncs();

void write_image_atomic(const std::filesystem::path& out, const cv::Mat& image, bool overwrite = true,
                        const std::vector<int>& params = {});
// The same for bytes already encoded (the GPU's JPEG encoder). `despite_interrupt`: written
// even after SIGINT/SIGTERM (the batch's --summary, which reports the interrupted run).
// `dirs`: the directory's fsync after the rename left to it (nullptr: done here).
void write_bytes_atomic(const std::filesystem::path& out, const std::vector<unsigned char>& bytes, bool overwrite = true,
                        bool despite_interrupt = false, directory_syncs* dirs = nullptr);

// The same for bytes in several places, written in order (writev): a TIFF stack's directories
// and its pages' samples where they lie, without one buffer holding them all.
struct byte_span {
  const unsigned char* data;
  std::size_t bytes;
};
void write_spans_atomic(const std::filesystem::path& out, const std::vector<byte_span>& spans, bool overwrite = true,
                        bool despite_interrupt = false, directory_syncs* dirs = nullptr);

// write_spans_atomic in two steps, for a batch whose encoding threads hand the waits (fsync,
// the move onto the name) to threads of their own: stage_output writes the bytes into the temp
// file (the checks and errors as write_spans_atomic's); commit_output fsyncs it and moves it
// onto its name (rename, or link + unlink), the directory's fsync as `dirs` says. A staged
// output dropped uncommitted (an error, an interrupt) has its temp file removed.
class staged_output {
 public:
  staged_output() = default;
  staged_output(staged_output&& o) noexcept;
  staged_output& operator=(staged_output&& o) noexcept;
  staged_output(const staged_output&) = delete;
  staged_output& operator=(const staged_output&) = delete;
  ~staged_output();

 private:
  friend staged_output stage_output(const std::filesystem::path&, const std::vector<byte_span>&, bool, bool);
  friend void commit_output(staged_output&, directory_syncs*);
  staged_output(int fd, std::filesystem::path temp, std::filesystem::path out, bool overwrite, bool despite_interrupt)
      : fd_(fd), temp_(std::move(temp)), out_(std::move(out)), overwrite_(overwrite), despite_interrupt_(despite_interrupt) {}
  void drop();
  int fd_ = -1;
  std::filesystem::path temp_, out_;
  bool overwrite_ = true, despite_interrupt_ = false;
};
staged_output stage_output(const std::filesystem::path& out, const std::vector<byte_span>& spans, bool overwrite = true,
                           bool despite_interrupt = false);
void commit_output(staged_output& staged, directory_syncs* dirs = nullptr);

// True for names write_image_atomic uses for its temp files (tests look for leftovers).
bool is_temp_name(const std::filesystem::path& file);

}  // namespace gpuconv::app
