#include "cli.hpp"

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "conv/boundary_name.hpp"
#include "errors.hpp"
#include "kernel_io.hpp"

#ifndef GPUCONV_VERSION
#error "GPUCONV_VERSION must be defined by the build (src/CMakeLists.txt)"
#endif

namespace gpuconv::app {

namespace {

// Option values as typed, converted after parsing so that errors name the option.
struct raw_values {
  std::string mode = "same", boundary = "reflect101", depth = "same", alpha = "premultiply", device = "auto",
              decoder = "auto";
  bool correlate = false, version = false;
  std::string extensions, format;
  bool skip_existing = false, overwrite = false;
  std::string shard;
  int shard_count = 0;
};

const char* const convolve_examples = R"(
Values are convolved in their stored units (8-bit 0..255, 16-bit 0..65535, float as is),
then out = S * conv + B, rounded half to even and saturated for 8/16-bit outputs. Depth
conversion does not rescale (--depth 16 on an 8-bit image keeps 0..255 values).
--correlate --boundary reflect101 on an 8-bit image equals cv::filter2D(img, -1, k).

KERNEL: a text file (rows of numbers; spaces, tabs or commas; '#' comments), an image file
(a PSF, read as gray and normalised to sum 1), or a named kernel (`gpuconv kernels`).

Stacks: an INPUT that is a multi-page TIFF (one gray page per z slice) is convolved in 3D
with a PSF stack (a multi-page TIFF, normalised to sum 1), gaussian3d:SX,SY,SZ, or any 2D
kernel (applied to every slice); the OUTPUT is a multi-page TIFF.

Examples:
  gpuconv photo.jpg gaussian:2 blurred.jpg
  gpuconv scan.png k.txt out.png --correlate --boundary replicate
  gpuconv in.tif sobel-x dx.tif --depth 32f
  gpuconv in.png psf.png out.png --mode full --boundary zero
  gpuconv stack.tif psf.tif blurred.tif --boundary reflect
  gpuconv batch photos/ box:5 out/ --recursive --format png
  gpuconv kernels

Exit codes: 0 ok, 1 processing failed, 2 usage error, 3 input problem, 4 output problem,
130/143 interrupted (SIGINT/SIGTERM).)";

const char* const batch_footer = R"(
Every image under IN_DIR with one of the --ext extensions is convolved into OUT_DIR under
the same name (and, with --recursive, the same relative folder). An existing output is a
failure for that file unless --skip-existing or --overwrite. Bad files are reported and
skipped; the summary lists them; the exit code is 1 when any file failed.

Examples:
  gpuconv batch photos/ gaussian:3 blurred/ --jobs 8
  gpuconv batch scans/ k.txt out/ --recursive --ext png,tif --format png --skip-existing)";

void add_convolution_options(CLI::App& app, cli_options& o, raw_values& raw) {
  app.add_option("--mode", raw.mode, "output size: same (default), full, valid")
      ->check(CLI::IsMember({"same", "full", "valid"}));
  app.add_flag("--correlate", raw.correlate, "correlation (cv::filter2D) instead of convolution");
  app.add_option("--boundary", raw.boundary,
                 "pixels outside the image: zero, replicate, reflect, reflect101 (default), wrap, constant:V "
                 "(V in stored units)");
  app.add_flag("--normalize", o.normalize, "scale the kernel to sum 1");
  app.add_option("--scale", o.settings.scale, "S in out = S * conv + B (default 1)");
  app.add_option("--offset", o.settings.offset, "B in out = S * conv + B (default 0), in stored units");
  app.add_option("--depth", raw.depth,
                 "output depth: same (default), 8, 16, 32f; no rescaling, 8/16-bit round and saturate")
      ->check(CLI::IsMember({"same", "8", "16", "32f"}));
  app.add_option("--alpha", raw.alpha, "RGBA / gray+alpha: premultiply (default), separate, keep")
      ->check(CLI::IsMember({"premultiply", "separate", "keep"}));
  app.add_option("--device", raw.device, "auto (default: CUDA if present, else CPU), cuda, cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app.add_option("--decoder", raw.decoder,
                 "JPEG decoder: auto (default: the GPU's, nvJPEG, with --device cuda when available), cpu (OpenCV: "
                 "libjpeg's exact pixels), gpu (nvJPEG or an error)")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  app.add_option("--quality", o.settings.codec.jpeg_quality, "JPEG output quality 1..100 (default 95, as OpenCV)")
      ->check(CLI::Range(1, 100));
  app.add_option("--png-level", o.settings.codec.png_level,
                 "PNG zlib level 0..9 (default: OpenCV's fastest setting, level 1 with RLE and the Sub filter)")
      ->check(CLI::Range(0, 9));
  app.add_flag("-q,--quiet", o.quiet, "no notices (clipping, CPU fallback, progress)");
  app.add_flag("--version", raw.version, "print the version and exit");
}

conv::boundary parse_boundary(const std::string& text, float& constant) {
  // the rules by name but `constant`, which takes its value here
  if (const auto b = conv::boundary_named(text); b && *b != conv::boundary::constant) return *b;
  if (text.rfind("constant:", 0) == 0) {
    const auto v = parse_number(text.substr(9));
    if (!v || !std::isfinite(*v) || std::abs(*v) > 3.4e38)
      throw usage_error("--boundary " + text + ": V must be a finite number");
    constant = float(*v);
    return conv::boundary::constant;
  }
  if (text == "constant") throw usage_error("--boundary constant needs a value: constant:V (e.g. constant:0)");
  throw usage_error("--boundary " + text + ": expected zero, replicate, reflect, reflect101, wrap or constant:V");
}

void convert(const raw_values& raw, cli_options& o) {
  auto& s = o.settings;
  s.semantics.op = raw.correlate ? conv::operation::correlation : conv::operation::convolution;
  s.semantics.mode = raw.mode == "full" ? conv::output_mode::full
                     : raw.mode == "valid" ? conv::output_mode::valid
                                           : conv::output_mode::same;
  s.semantics.border = parse_boundary(raw.boundary, s.semantics.constant_value);
  s.depth = raw.depth == "8" ? output_depth::u8
            : raw.depth == "16" ? output_depth::u16
            : raw.depth == "32f" ? output_depth::f32
                                 : output_depth::same;
  s.alpha = raw.alpha == "separate" ? alpha_mode::separate
            : raw.alpha == "keep" ? alpha_mode::keep
                                  : alpha_mode::premultiply;
  s.device = raw.device == "cuda" ? conv::backend::cuda
             : raw.device == "cpu" ? conv::backend::cpu
                                   : conv::backend::automatic;
  s.decoder = raw.decoder == "cpu" ? jpeg_decoder::cpu : raw.decoder == "gpu" ? jpeg_decoder::gpu : jpeg_decoder::automatic;
  o.batch.codec = s.codec;
  if (!std::isfinite(s.scale)) throw usage_error("--scale must be a finite number");
  if (!std::isfinite(s.offset)) throw usage_error("--offset must be a finite number");
}

std::vector<std::string> parse_extensions(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = std::min(list.find(',', start), list.size());
    std::string e = to_lower(list.substr(start, comma - start));
    while (!e.empty() && e.front() == ' ') e.erase(0, 1);
    while (!e.empty() && e.back() == ' ') e.pop_back();
    if (!e.empty() && e.front() == '.') e.erase(0, 1);
    if (e.empty() || e.find_first_of("/\\.") != std::string::npos)
      throw usage_error("--ext " + list + ": expected extensions like png,jpg");
    out.push_back("." + e);
    start = comma + 1;
  }
  return out;
}

// Runs CLI11 over args; help and parse errors become cli_options::text / usage_error.
bool run_parser(CLI::App& app, const std::vector<std::string>& args, cli_options& o) {
  std::vector<const char*> argv{"gpuconv"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    o.cmd = command::print;
    o.text = app.help();
    return false;
  } catch (const CLI::CallForAllHelp&) {
    o.cmd = command::print;
    o.text = app.help("", CLI::AppFormatMode::All);
    return false;
  } catch (const CLI::ParseError& e) {
    throw usage_error(e.what());
  }
  return true;
}

}  // namespace

namespace {

bool parse_int(const std::string& text, long long& out) {
  if (text.empty() || text.size() > 18) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  out = std::stoll(text);
  return true;
}

}  // namespace

shard_spec resolve_shard(const std::string& spec, int count, const char* (*env)(const char*)) {
  shard_spec s;
  long long i = 0, n = 0;
  if (spec != "auto") {
    const auto slash = spec.find('/');
    if (slash == std::string::npos || !parse_int(spec.substr(0, slash), i) || !parse_int(spec.substr(slash + 1), n) ||
        n < 1 || n > 1000000 || i >= n)
      throw usage_error("--shard " + spec + ": expected I/N with 0 <= I < N (e.g. 0/4), or auto");
    return {int(i), int(n)};
  }
  auto number = [&](const char* name, long long& v) {
    const char* text = env(name);
    if (!text || !*text) return false;
    if (!parse_int(text, v)) throw usage_error(std::string("--shard auto: ") + name + "='" + text + "' is not a number");
    return true;
  };
  if (number("SLURM_ARRAY_TASK_ID", i)) {
    long long lo = 0, hi = 0;
    number("SLURM_ARRAY_TASK_MIN", lo);
    if (!number("SLURM_ARRAY_TASK_COUNT", n)) {
      if (!number("SLURM_ARRAY_TASK_MAX", hi))
        throw usage_error("--shard auto: SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor "
                          "SLURM_ARRAY_TASK_MAX");
      n = hi - lo + 1;
    }
    i -= lo;
    if (n < 1 || i < 0 || i >= n)
      throw usage_error("--shard auto: SLURM_ARRAY_TASK_ID " + std::to_string(i + lo) + " is not one of " +
                        std::to_string(n) + " tasks from " + std::to_string(lo) +
                        " (an array with steps, e.g. 0-7:2, is not supported)");
    return {int(i), int(n)};
  }
  if (number("JOB_COMPLETION_INDEX", i)) {
    if (count < 1) throw usage_error("--shard auto with JOB_COMPLETION_INDEX needs --shard-count N");
    if (i >= count)
      throw usage_error("--shard auto: JOB_COMPLETION_INDEX " + std::to_string(i) + " is not below --shard-count " +
                        std::to_string(count));
    return {int(i), count};
  }
  throw usage_error("--shard auto: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set");
  return s;
}

std::uint64_t path_hash(const std::string& relative_path) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : relative_path) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

int shard_of(const std::string& relative_path, int count) { return int(path_hash(relative_path) % std::uint64_t(count)); }

int device_share_of(const std::string& relative_path, int shards, int devices) {
  return int(path_hash(relative_path) / std::uint64_t(std::max(1, shards)) % std::uint64_t(devices));
}

bool takes_file(const std::string& relative_path, const batch_options& o) {
  if (o.shard_count > 1 && shard_of(relative_path, o.shard_count) != o.shard_index) return false;
  return o.device_count <= 1 || device_share_of(relative_path, o.shard_count, o.device_count) == o.device_index;
}

std::vector<std::string> default_extensions() {
  return {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".pgm", ".ppm", ".pnm", ".webp"};
}

std::string version_string() { return std::string("gpuconv ") + GPUCONV_VERSION; }

cli_options parse_cli(const std::vector<std::string>& args) {
  cli_options o;
  o.args = args;
  raw_values raw;
  const std::string first = args.empty() ? "" : args[0];

  if (first == "kernels") {
    if (args.size() > 1 && args[1] != "--help" && args[1] != "-h")
      throw usage_error("`gpuconv kernels` takes no arguments, got '" + args[1] + "'");
    o.cmd = command::kernels;
    return o;
  }

  if (first == "bench") {
    CLI::App app("gpuconv bench: batch throughput against the decode + encode ceiling (--io-only) on generated "
                 "RGB PNGs",
                 "gpuconv bench");
    std::string workload = "png";
    app.add_option("--workload", workload,
                   "png: RGB PNGs of --size^2 (default 1024); jpeg: 12 MP (4000 x 3000) JPEG photographs, quality 92")
        ->check(CLI::IsMember({"png", "jpeg"}));
    app.add_option("--images", o.bench.images, "number of generated images (default 32)")->check(CLI::Range(1, 100000));
    app.add_option("--size", o.bench.size, "png: side of the square images (default 1024)")->check(CLI::Range(8, 16384));
    app.add_flag("!--no-peer", o.bench.peer, "skip the OpenCV-only pipeline");
    app.add_option("--dir", o.bench.dir, "working directory (default: a fresh one in the temp dir)");
    app.add_flag("--keep", o.bench.keep, "keep the generated images and outputs");
    app.add_option("--rounds", o.bench.rounds,
                   "rounds of the runs, interleaved; each run's median reported (default 3)")
        ->check(CLI::Range(1, 100));
    app.add_option("--kernel", o.kernel, "kernel (default gaussian:3)");
    app.add_option("--jobs", o.batch.jobs, "decoder and encoder threads each (default: hardware concurrency)")
        ->check(CLI::Range(1, 1024));
    app.add_option("--device", raw.device, "auto, cuda, cpu")->check(CLI::IsMember({"auto", "cuda", "cpu"}));
    app.add_flag("-q,--quiet", o.quiet, "no notices");
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (!run_parser(app, rest, o)) return o;
    o.bench.workload = workload == "jpeg" ? bench_workload::jpeg : bench_workload::png;
    if (o.kernel.empty()) o.kernel = o.bench.workload == bench_workload::jpeg ? "gaussian:2" : "gaussian:3";
    convert(raw, o);
    o.cmd = command::bench;
    return o;
  }

  if (first == "deconvolve") {
    CLI::App app("gpuconv deconvolve: Richardson-Lucy deconvolution of a stack (multi-page TIFF) with a PSF",
                 "gpuconv deconvolve");
    app.add_option("STACK", o.input, "observed stack: multi-page TIFF (8/16-bit or float; one page is a 2D image)")
        ->required();
    app.add_option("PSF", o.kernel, "PSF stack (multi-page TIFF), PSF image, text kernel or named kernel "
                                    "(gaussian3d:SX,SY,SZ); normalised to sum 1")
        ->required();
    app.add_option("OUTPUT", o.output, "output stack (.tif)")->required();
    app.add_option("-n,--iterations", o.deconvolve.iterations, "RL iterations (default 10)")->check(CLI::Range(1, 100000));
    app.add_flag("--timing", o.timing, "print where the time went (kernel, read, plan with the device's start-up, "
                                       "deconvolve, write) on stderr");
    app.add_option("--tv", o.deconvolve.tv,
                   "total-variation weight LAMBDA (RL-TV, Dey et al. 2006), 0 (default: none) to below 1/6; "
                   "typical 0.001-0.01");
    app.add_option("--epsilon", o.deconvolve.epsilon,
                   "division guard: observed/blurred only where blurred > E * max(observed), else 0 (default 1e-6)");
    raw.boundary = "reflect";
    app.add_option("--boundary", raw.boundary,
                   "voxels beyond the stack for the PSF's convolution: reflect (default), reflect101, replicate, zero, "
                   "wrap, constant:V");
    raw.depth = "32f";
    app.add_option("--depth", raw.depth, "output depth: 32f (default), same, 8, 16 (rounded, saturated)")
        ->check(CLI::IsMember({"same", "8", "16", "32f"}));
    app.add_option("--device", raw.device, "auto (default: CUDA if present, else CPU), cuda, cpu")
        ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
    app.add_flag("-q,--quiet", o.quiet, "no notices, no progress");
    app.footer(R"(
Richardson-Lucy: u <- u * ((y / (u (*) h)) (*corr) h), u_0 = max(y, 0), the PSF h normalised to
sum 1 (negative PSF values are set to 0 first, with a notice); with --tv the update is divided
by 1 - LAMBDA div(grad u / |grad u|). Non-negative throughout. Progress per iteration on stderr
when it is a terminal.

Examples:
  gpuconv deconvolve cells.tif psf.tif restored.tif --iterations 50
  gpuconv deconvolve cells.tif gaussian3d:1.5,1.5,3 restored.tif -n 30 --tv 0.002

Exit codes: 0 ok, 1 processing failed, 2 usage error, 3 input problem, 4 output problem,
130/143 interrupted (no output written).)");
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (!run_parser(app, rest, o)) return o;
    if (!(o.deconvolve.tv >= 0 && o.deconvolve.tv < 1.0 / 6))
      throw usage_error("--tv " + std::to_string(o.deconvolve.tv) + ": LAMBDA must be >= 0 and below 1/6");
    if (!(o.deconvolve.epsilon > 0 && o.deconvolve.epsilon < 1))
      throw usage_error("--epsilon " + std::to_string(o.deconvolve.epsilon) + ": E must be > 0 and < 1");
    convert(raw, o);
    o.cmd = command::deconvolve;
    return o;
  }

  if (first == "batch") {
    CLI::App app("gpuconv batch: convolve every image of a directory", "gpuconv batch");
    app.add_option("IN_DIR", o.input, "directory of input images")->required();
    app.add_option("KERNEL", o.kernel, "text file, image (PSF) or named kernel")->required();
    app.add_option("OUT_DIR", o.output, "output directory (created if missing)")->required();
    add_convolution_options(app, o, raw);
    app.add_flag("-r,--recursive", o.batch.recursive, "descend into subdirectories, keeping the relative tree");
    app.add_option("--ext", raw.extensions, "input extensions, comma-separated, case-insensitive (default: "
                                            "png,jpg,jpeg,tif,tiff,bmp,pgm,ppm,pnm,webp)");
    app.add_option("--format", raw.format, "output extension (default: the input's)");
    auto* skip = app.add_flag("--skip-existing", raw.skip_existing, "leave existing outputs alone (counted as skipped)");
    auto* over = app.add_flag("--overwrite", raw.overwrite, "replace existing outputs");
    skip->excludes(over);
    app.add_option("-j,--jobs", o.batch.jobs, "decoder and encoder threads each (default: hardware concurrency)")
        ->check(CLI::Range(1, 1024));
    app.add_flag("--stop-on-error", o.batch.stop_on_error, "stop at the first failed file");
    app.add_flag("--io-only", o.batch.io_only, "decode and encode only, no convolution (measures the I/O ceiling)");
    app.add_option("--shard", raw.shard,
                   "I/N: take the files of shard I of N (a stable hash of each relative path); auto: from "
                   "SLURM_ARRAY_TASK_ID/COUNT (or MIN/MAX) or JOB_COMPLETION_INDEX with --shard-count");
    app.add_option("--shard-count", raw.shard_count, "the number of shards for --shard auto with JOB_COMPLETION_INDEX")
        ->check(CLI::Range(1, 1000000));
    app.add_option("--files-from", o.batch.files_from,
                   "take the inputs from this list (one path per line, relative to IN_DIR or absolute under it; - for "
                   "stdin) instead of scanning IN_DIR");
    app.add_option("--devices", o.batch.devices,
                   "GPUs for --device cuda/auto: all (default: every visible GPU) or a list of ordinals, e.g. 0,2; "
                   "with two or more, one worker process per listed GPU takes a share of the files");
    app.add_option("--summary", o.batch.summary,
                   "write a JSON summary (counts, failures with reasons, bytes, seconds) to this file at the end");
    app.add_flag("--timing", o.timing, "print where the command's time went (process start-up, setup with CUDA's "
                                       "start, the batch, after it) on stderr");
    app.footer(batch_footer);
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (!run_parser(app, rest, o)) return o;
    if (raw.version) {
      o.cmd = command::print;
      o.text = version_string() + "\n";
      o.version = true;
      return o;
    }
    convert(raw, o);
    if (!raw.extensions.empty()) o.batch.extensions = parse_extensions(raw.extensions);
    if (!raw.format.empty()) o.batch.format = parse_extensions(raw.format).at(0);
    if (!raw.format.empty() && raw.format.find(',') != std::string::npos)
      throw usage_error("--format takes one extension, got '" + raw.format + "'");
    if (!raw.shard.empty()) {
      const shard_spec sh = resolve_shard(raw.shard, raw.shard_count, [](const char* n) -> const char* { return std::getenv(n); });
      o.batch.shard_index = sh.index;
      o.batch.shard_count = sh.count;
    } else if (raw.shard_count) {
      throw usage_error("--shard-count goes with --shard auto");
    }
    o.batch.existing = raw.skip_existing ? existing_policy::skip
                       : raw.overwrite   ? existing_policy::overwrite
                                         : existing_policy::fail;
    o.cmd = command::batch;
    return o;
  }

  CLI::App app("gpuconv: FFT-based image convolution (CUDA or CPU)\n\n"
               "  gpuconv INPUT KERNEL OUTPUT [options]\n"
               "  gpuconv batch IN_DIR KERNEL OUT_DIR [options]   (gpuconv batch --help)\n"
               "  gpuconv deconvolve STACK PSF OUTPUT [options]   (Richardson-Lucy; gpuconv deconvolve --help)\n"
               "  gpuconv kernels                                 (the named kernels)\n"
               "  gpuconv bench [options]                         (batch throughput benchmark)\n",
               "gpuconv");
  app.add_option("INPUT", o.input, "input image (PNG, JPEG, TIFF, BMP, ...; 8/16-bit, float TIFF; gray, RGB, RGBA)");
  app.add_option("KERNEL", o.kernel, "text file, image (PSF) or named kernel");
  app.add_option("OUTPUT", o.output, "output image; its extension picks the format");
  add_convolution_options(app, o, raw);
  app.add_flag("--timing", o.timing, "print where the time went (CUDA start-up, read, decode, upload, convolve, "
                                     "download, encode, write; for a stack: kernel, read, plan, convolve, write) on stderr");
  app.footer(convolve_examples);
  if (!run_parser(app, args, o)) return o;
  if (raw.version) {
    o.cmd = command::print;
    o.text = version_string() + "\n";
    o.version = true;
    return o;
  }
  if (o.input.empty() || o.kernel.empty() || o.output.empty())
    throw usage_error("expected INPUT KERNEL OUTPUT (see gpuconv --help)");
  convert(raw, o);
  o.cmd = command::convolve;
  return o;
}

}  // namespace gpuconv::app
