// The command line, parsed into a struct (tests call parse_cli directly):
//   gpuconv INPUT KERNEL OUTPUT [options]
//   gpuconv batch IN_DIR KERNEL OUT_DIR [options]
//   gpuconv kernels
//   gpuconv bench [options]
// The first argument picks the command; options are CLI11's. Bad options and values throw
// usage_error (exit 2); --help and --version return command::print with the text to print.
#pragma once
#include <string>
#include <vector>

#include "convolve_image.hpp"

namespace gpuconv::app {

enum class command { convolve, batch, kernels, bench, print };
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
};

// gpuconv bench workloads: generated 1024^2 PNGs, or 12 MP (4000 x 3000) JPEG photographs.
enum class bench_workload { png, jpeg };

struct bench_options {
  bench_workload workload = bench_workload::png;
  int images = 32;
  int size = 1024;                      // png: the side; jpeg: ignored (4000 x 3000)
  bool peer = true;                     // also time OpenCV alone on the same files
  std::string dir;                      // empty: a fresh directory under the system temp dir
  bool keep = false;                    // keep the generated images and outputs
};

struct cli_options {
  command cmd = command::convolve;
  std::string input, kernel, output;    // INPUT KERNEL OUTPUT, or IN_DIR KERNEL OUT_DIR
  convolve_settings settings;           // settings.device is the --device value, not yet resolved
  bool normalize = false;
  bool quiet = false;
  bool timing = false;                  // --timing: where a single image's time goes
  batch_options batch;
  bench_options bench;
  std::string text;                     // command::print: help or version text
  bool version = false;                 // --version: the GPU codecs' line follows the text
};

cli_options parse_cli(const std::vector<std::string>& args);  // the arguments after argv[0]

std::vector<std::string> default_extensions();

std::string version_string();  // "gpuconv 0.1.0"

}  // namespace gpuconv::app
