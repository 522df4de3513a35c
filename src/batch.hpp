// Batch mode: every image of a directory through one convolver.
//
//   N decoder threads --(bounded queue)--> 1 compute thread --(bounded queue)--> N encoder threads
//   read_image, to_planes                  convolver::run (owns        from_planes, atomic write
//                                          the plans, cached by shape)
//
// The bounded queues keep at most ~2 N images in flight whatever the directory holds. A file
// that fails (unreadable, corrupt, unwritable output, an existing output without
// --overwrite) is reported on one line and skipped. An interrupt (SIGINT/SIGTERM) stops the
// decoders; images in flight are dropped before their final rename, so no partial or temp
// file remains.
#pragma once
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "convolve_image.hpp"

namespace gpuconv::app {

struct batch_item {
  std::filesystem::path input, output;
};

struct batch_failure {
  std::string file, reason;
};

// One GPU's worker under --devices (devices.hpp).
struct device_report {
  std::string gpu;  // its CUDA_VISIBLE_DEVICES value
  int done = 0, skipped = 0, failed = 0;
  double seconds = 0;
};

struct batch_report {
  int total = 0, done = 0, skipped = 0, failed = 0, not_processed = 0;
  long long clipped_pixels = 0;
  long long bytes_in = 0, bytes_out = 0;  // of the files done: inputs read, outputs written
  int clipped_files = 0;
  double seconds = 0;  // the batch's own clock: from the scan of IN_DIR to the last file's rename
  // The batch command's time outside that clock (set by run_batch_command; -1: not known):
  // process start to main (from /proc, in steps of 10 ms), main to the batch (arguments, the
  // kernel, the CUDA driver's start), and the batch's end to the command's (the summary, the
  // buffers released or left to the exit). The exit itself (the driver tearing the context
  // down) only the parent sees (run_batch_in_child).
  double startup_seconds = -1, setup_seconds = -1, after_seconds = -1;
  bool interrupted = false;
  std::vector<batch_failure> failures;
  std::vector<device_report> devices;  // --devices: per GPU (empty otherwise)
};

// Scans IN_DIR (OUT_DIR excluded when it lies inside) and decides each file's fate: to
// process, skipped (existing output with --skip-existing) or failed (existing output by
// default; output path equal to an input; two inputs with one output). Sorted by path.
// Throws usage_error when IN_DIR is not a directory or OUT_DIR is IN_DIR.
std::vector<batch_item> plan_batch(const std::filesystem::path& in_dir, const std::filesystem::path& out_dir,
                                   const batch_options& options, batch_report& report);

// Runs the pipeline. `c` is null for --io-only (decode and encode the decoded image as is).
// Per-file failures are printed on `log` as they happen; progress on `log` when `progress`.
batch_report run_batch(const std::filesystem::path& in_dir, const std::filesystem::path& out_dir,
                       const batch_options& options, convolver* c, bool quiet, bool progress, std::ostream& log);

// "done N, skipped N, failed N" and the failed files; the exit code for the report.
void print_summary(const batch_report& r, bool quiet, std::ostream& log);

// The report as JSON (--summary): shard, total, processed, skipped, failed (with reasons),
// not_processed, interrupted, bytes_in, bytes_out, seconds, clipped_pixels. Summaries of the
// shards of one job add up: merge them by summing the counts (README "At scale").
std::string summary_json(const batch_report& r, const batch_options& options);
int exit_code_for(const batch_report& r);

}  // namespace gpuconv::app
