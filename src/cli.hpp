// The command line, parsed into a struct (tests call parse_cli directly):
//   gpuconv INPUT KERNEL OUTPUT [options]
//   gpuconv batch IN_DIR KERNEL OUT_DIR [options]
//   gpuconv deconvolve STACK PSF OUTPUT [options]
//   gpuconv kernels
//   gpuconv bench [options]
// The first argument picks the command; options are CLI11's. Bad options and values throw
// usage_error (exit 2); --help and --version return command::print with the text to print.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "convolve_image.hpp"

namespace gpuconv::app {

enum class command { convolve, batch, deconvolve, kernels, bench, print };
enum class existing_policy { fail, skip, overwrite };

struct batch_options {
  bool recursive = false;
  std::vector<std::string> extensions;  // lower case, with the dot; empty: default_extensions()
  std::string format;                   // output extension with the dot; empty: same as the input
  existing_policy existing = existing_policy::fail;
  int jobs = 0;                         // decoder and encoder threads each (0: hardware concurrency)
  bool stop_on_error = false;
  bool io_only = false;                 // decode + encode without convolving (the I/O ceiling)
  codec_options codec;                  // the encoders' settings (also in convolve_settings::codec)
  // --shard I/N: this process takes the files whose shard_of(relative path, N) is I
  int shard_index = 0, shard_count = 1;
  std::string files_from;               // --files-from: a list of inputs (a path, or "-": stdin)
  std::string summary;                  // --summary: a JSON report written here at the end
  // --devices all|I,J,...: one worker process per listed GPU (devices.hpp); a worker takes the
  // files of its shard whose device_share_of is its index among device_count workers
  std::string devices = "all";
  int device_index = 0, device_count = 1;
  // The process ends right after this batch (the batch command, not the bench or the tests): its
  // GPU buffers, pinned staging and extra convolvers are left to the exit instead of released
  // one by one after the last file (GPUCONV_RELEASE_AT_END=1 releases them, for measurements).
  bool leave_buffers_to_exit = false;
};

// --shard SPEC: "I/N" (0 <= I < N), or "auto": SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN
// (0 when unset) of SLURM_ARRAY_TASK_COUNT (or MAX - MIN + 1) shards, else JOB_COMPLETION_INDEX
// (Kubernetes Indexed Jobs) of `count` shards (--shard-count). `env` looks a variable up
// (getenv in the CLI). Throws usage_error naming the value.
struct shard_spec {
  int index = 0, count = 1;
};
shard_spec resolve_shard(const std::string& spec, int count, const char* (*env)(const char*));

// The shard of a file: a stable hash (64-bit FNV-1a) of its path relative to IN_DIR, with '/'
// separators, modulo `count`. A file's shard depends on its own path only, so files added
// between runs never move others to another shard.
int shard_of(const std::string& relative_path, int count);
std::uint64_t path_hash(const std::string& relative_path);  // the hash shard_of reduces

// Which of `devices` worker processes takes a file of a shard of `shards`: (hash / shards) mod
// devices, independent of the shard (hash mod shards) so that every shard splits evenly.
int device_share_of(const std::string& relative_path, int shards, int devices);

// A file belongs to this process: its shard and, under --devices, its worker's share.
bool takes_file(const std::string& relative_path, const batch_options& o);

// gpuconv bench workloads: generated 1024^2 PNGs, or 12 MP (4000 x 3000) JPEG photographs.
enum class bench_workload { png, jpeg };

struct bench_options {
  bench_workload workload = bench_workload::png;
  int images = 32;
  int size = 1024;                      // png: the side; jpeg: ignored (4000 x 3000)
  bool peer = true;                     // also time OpenCV alone on the same files
  std::string dir;                      // empty: a fresh directory under the system temp dir
  bool keep = false;                    // keep the generated images and outputs
  int rounds = 3;                       // rounds of the runs, one after the other; medians reported
};

// gpuconv deconvolve: Richardson-Lucy (conv/deconvolve.hpp); the boundary, device and depth
// come from convolve_settings (defaults there: reflect, auto, 32f).
struct deconvolve_cli {
  int iterations = 10;
  double tv = 0;          // --tv LAMBDA, 0 <= LAMBDA < 1/6
  double epsilon = 1e-6;  // --epsilon E: the division guard relative to the stack's maximum
};

struct cli_options {
  command cmd = command::convolve;
  std::string input, kernel, output;    // INPUT KERNEL OUTPUT, or IN_DIR KERNEL OUT_DIR
  convolve_settings settings;           // settings.device is the --device value, not yet resolved
  bool normalize = false;
  bool quiet = false;
  bool timing = false;                  // --timing: where a single image's (or a batch's) time goes
  batch_options batch;
  bench_options bench;
  deconvolve_cli deconvolve;
  std::string text;                     // command::print: help or version text
  bool version = false;                 // --version: the GPU codecs' line follows the text
  std::vector<std::string> args;        // the arguments as given (--devices relaunches them)
};

cli_options parse_cli(const std::vector<std::string>& args);  // the arguments after argv[0]

std::vector<std::string> default_extensions();

std::string version_string();  // "gpuconv 0.1.0"

}  // namespace gpuconv::app
