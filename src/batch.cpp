#include "batch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iomanip>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <variant>

#include <sys/resource.h>
#include <unistd.h>

#include "atomic_write.hpp"
#include "bounded_queue.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "image_io.hpp"
#include "stack_io.hpp"
#include "interrupt.hpp"
#include "device_pool.hpp"
#include "jpeg_header.hpp"
#include "png_codec.hpp"
#ifdef GPUCONV_HAVE_NVJPEG
#include "jpeg_gpu.hpp"
#endif
#include "kernel_io.hpp"
#include "mat_pool.hpp"

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

// Decoders and encoders run at a slightly lower priority (nice +4, this thread only: Linux
// applies setpriority(PRIO_PROCESS, 0) to the calling thread) than the compute threads,
// so that with --jobs at or above the core count the I/O threads, which saturate the CPU,
// do not starve the threads that feed the GPU. Best effort: a failure changes nothing.
void yield_to_compute() {
  const int now = getpriority(PRIO_PROCESS, 0);
  (void)setpriority(PRIO_PROCESS, 0, std::min(now + 4, 19));
}

// A JPEG for the GPU's decoder: the file's bytes and what its headers say.
struct jpeg_file {
  std::vector<unsigned char> bytes;
  pipeline::jpeg_header header;
};
// A JPEG decoded by the GPU's decode stage: planar BGR in a buffer of the device pool.
struct device_jpeg {
  std::shared_ptr<unsigned char> planes;
  int height, width;
};
// A PNG inflated by a decoder (pipeline/png_codec.hpp), its rows' filters None or Sub: the GPU
// undoes them.
struct png_input {
  pipeline::png_scanlines scanlines;
};
// An output already encoded (by the GPU's JPEG encoder).
struct encoded_file {
  std::vector<unsigned char> bytes;
  long long clipped = 0;
};

// An image on its way. From the decoders: the decoded cv::Mat (--io-only, and the GPU
// backend, which converts on the GPU), float planes (CPU backend), a JPEG's bytes (the
// GPU decodes it) or a PNG's scanlines (the GPU unfilters them). From the compute workers:
// float planes (CPU), the output image (GPU), the encoded output (GPU JPEG) or a PNG's
// scanlines or zlib stream (GPU; the encoder makes the file).
struct work {
  std::size_t index;
  std::variant<cv::Mat, planar_image, jpeg_file, device_jpeg, output_image, encoded_file, png_input,
               convolver::png_result>
      image;
};

// An integer setting from the environment (the tuning knobs below): its value where it lies in
// [lo, hi], else the fallback.
int env_int(const char* name, int lo, int hi, int fallback) {
  if (const char* env = std::getenv(name)) {
    const int n = std::atoi(env);
    if (n >= lo && n <= hi) return n;
  }
  return fallback;
}
// JPEGs the GPU decode stage takes at once: nvJPEG's hardware decoder is faster on batches
// (H100, 12 MP: 1.3-2.3 ms an image in batches of 7-8, 6.5 ms alone).
// GPUCONV_DECODE_BATCH overrides (1..64).
std::size_t gpu_batch_size() { return std::size_t(env_int("GPUCONV_DECODE_BATCH", 1, 64, 8)); }
// How long a GPU decode stage waits for a full batch once one JPEG is there: nvJPEG's batched
// decoder is initialised for one batch size, and a batch of another size initialises it again.
// GPUCONV_DECODE_PATIENCE_MS overrides (0..1000; 0: take what is there).
std::chrono::milliseconds decode_patience() {
  return std::chrono::milliseconds(env_int("GPUCONV_DECODE_PATIENCE_MS", 0, 1000, 20));
}
// GPU decode stages (threads), each taking one of nvJPEG's decoder states when free. A batch
// call returns when its decode has finished, so several stages keep the decoder fed: H100
// host, 480 photos of 12 MP, after nvJPEG's start-up, 2 stages 263-280 images/s, 3 stages
// 307-330 (the same machine start; 4 stages no faster). GPUCONV_DECODE_STAGES overrides (1..4;
// 0 where GPU-hybrid decoders take every JPEG: measurements and tests).
int decode_stage_count(int hybrid) { return env_int("GPUCONV_DECODE_STAGES", hybrid > 0 ? 0 : 1, 4, 3); }
// Beside the GPU-hybrid decoders (which take the JPEGs the stages leave), one hardware decoder
// stage and one decoder state: the other stages end once nvJPEG has loaded, and their states
// are not made. H200 host, 12 MP photos, --jobs 16, whole command from the shell, 1 stage
// against 3, interleaved rounds in three calls on two machine starts (medians, s): 1440
// photos 3.58 / 3.60, 4.17 / 4.39, 3.57 / 3.74 (faster in 12 rounds of 12); 480 photos
// 2.14 / 2.36, 2.08 / 2.24 (7 of 7). The exit is 0.12-0.20 s against 0.18-0.28 (one hardware
// decoder state to tear down instead of three) and the batch's own rate is no lower. Where
// GPUCONV_DECODE_STAGES is set, it is the count either way.
int stages_beside_hybrid(int stages) { return env_int("GPUCONV_DECODE_STAGES", 0, 4, -1) >= 0 ? stages : 1; }
// Decoders that decode JPEGs on the CPU while nvJPEG starts; the others wait for it. Its
// start-up is mostly system time (the driver): 0.5-1.0 s beside 4 busy decoders, 1.0-1.5 s
// beside 16 (H100 host, 16 cores), while one CPU decoder does ~8 photos/s and the GPU ~300
// once up: a quarter of the decoders (nvJPEG's decoder first used at 0.67-0.99 s with 4,
// 1.07-1.30 s with 16, in 480-photo batches of 12 MP).
// GPUCONV_STARTUP_DECODERS overrides (0..jobs; more: jobs).
int startup_decoders(int jobs) {
  return std::min(env_int("GPUCONV_STARTUP_DECODERS", 0, std::numeric_limits<int>::max(), std::max(1, jobs / 4)), jobs);
}
// Threads that decode JPEGs with nvJPEG's GPU-hybrid decoder (Huffman on the CPU, one image at a
// time) beside the hardware decoder's stages, from the same queue, once nvJPEG has loaded. H100
// host (16 cores), --jobs 16, 12 MP photos, two rounds each, images/s: 1440 photos, none 383.1 /
// 379.6, 6 threads 426.9 / 420.5, 8 433.0 / 435.1; 480 photos, none 244.0 / 240.4, 6 269.9 /
// 263.0, 8 274.3 / 266.8 (8 threads decoded 40-48% of the photos, at ~23 ms of CPU a photo, 3.5x
// less than libjpeg). By default half of --jobs, at most 8, where --jobs is 12 or more and the
// hardware decoder decodes (elsewhere the CPU they take is the batch's own);
// GPUCONV_HYBRID_DECODERS overrides (0..16, on any backend).
struct hybrid_setting {
  int threads;
  bool forced;
};
hybrid_setting hybrid_decoder_count(int jobs) {
  const int fallback = jobs >= 12 ? std::min(8, jobs / 2) : 0;
  const int n = env_int("GPUCONV_HYBRID_DECODERS", 0, 16, -1);
  return n < 0 ? hybrid_setting{fallback, false} : hybrid_setting{n, true};
}
// Decoded images waiting for a compute worker. GPUCONV_STAGED_IMAGES overrides (1..256).
std::size_t staged_image_count() { return std::size_t(env_int("GPUCONV_STAGED_IMAGES", 1, 256, 16)); }

// Bytes of CPU-decoded images (PNG, TIFF, ...; JPEGs where nvJPEG does not decode) that may wait
// for the GPU beyond the one-per-decoder count: the decoders go on decoding while the CUDA
// context, the workers' plans and the first kernels' modules are made (the first ~0.1-0.2 s of
// a batch), instead of stopping with a full queue and leaving the cores idle for that time,
// which a batch of CPU codecs cannot make up. H100 host, 256 PNGs of 1024^2 (3 MB decoded),
// gaussian:3, --jobs 16, six ABBA quads: the batch's own time 1.61-1.76 s, median 1.66, with the
// count alone, 1.53-1.64 s, median 1.60, with 512 MiB (faster in every quad; up to ~150 images
// queued, the decoders blocked 6.5 s summed over threads before, none after): ~0.45 GB more
// images held.
// 512 MiB, at most an eighth of the memory; GPUCONV_DECODED_MB overrides (0..65536; 0: the
// count alone, as before).
std::size_t decoded_byte_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const long long eighth = pages > 0 && page > 0 ? (long long)pages * page / 8 : 0;
  const long long fallback = std::min<long long>(512LL << 20, eighth);
  const int mb = env_int("GPUCONV_DECODED_MB", 0, 65536, -1);
  return std::size_t(mb < 0 ? fallback : (long long)mb << 20);
}

// Compute workers on the GPU, each with its own stream, plans and codec states, so that one
// image's copies, decode and encode overlap another's kernels. GPUCONV_GPU_WORKERS overrides (1..16).
int gpu_workers() { return env_int("GPUCONV_GPU_WORKERS", 1, 16, 3); }

// Encoder/writer threads: --jobs. GPUCONV_WRITERS overrides (1..256; measurements: H200 host,
// 1440 photos of 12 MP on the GPU, four interleaved rounds, 32 and 48 writers were 1-12% slower
// than 16 in every round).
int writer_count(int jobs) { return env_int("GPUCONV_WRITERS", 1, 256, jobs); }
// The outputs' commit stage: the writers encode each output and write its bytes into its temp
// file (stage_output), and these threads, which do nothing but wait, fsync it and move it onto
// its name (commit_output), so that many outputs' fsyncs overlap without more encoding threads
// than --jobs. 2-core machine, 10000 PNGs of 32 x 32 (scripts/load-test.sh's), --jobs 2, whole
// command, four interleaved rounds: 3.44-4.22 s with 8 committers against 4.95-5.28 with none
// (16: 4.27-4.44; none and 8 writers: 3.95-4.70); 16 photos of 12 MP on the CPU backend no
// different (1.41-1.53 s against 1.46-1.58). GPUCONV_COMMITTERS overrides (0: each writer
// commits its own outputs, as before).
int committer_count() { return env_int("GPUCONV_COMMITTERS", 0, 256, 8); }

#ifdef GPUCONV_HAVE_NVJPEG
// The GPU decoders' streams (the hardware decoder's stages, the GPU-hybrid threads) at the
// device's greatest priority, so that their kernels go before the workers' convolutions and
// encodes. H200, 1440 photos, four interleaved rounds: batch 400.4-407.0 images/s against
// 398.6-403.5 at the default priority, the whole command 0.1-1.1% faster in each round; nvJPEG
// alone, 3 hardware decoders beside 3 encoders: 432-436 decoded a second against 413-419
// (docs/benchmarks.md, session 43). GPUCONV_DECODE_PRIORITY=0: every stream at the default.
std::unique_ptr<cuda_stream> decoder_stream() {
  if (env_int("GPUCONV_DECODE_PRIORITY", 0, 1, 1) == 0) return std::make_unique<cuda_stream>();
  int least = 0, greatest = 0;
  GPUCONV_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return std::make_unique<cuda_stream>(greatest);
}
#endif

// When the process ends after the batch: nvJPEG's decoder states destroyed as soon as the last
// decode stage ends, beside the last images' convolution and encode, rather than by the exit,
// which spends ~0.1 s on them otherwise (H100 host, 1440 photos, eight interleaved pairs: the
// whole command 4.12-4.87 s, median 4.56, against 4.33-5.07, median 4.73; faster in seven of
// eight; the exit 0.16-0.28 s against 0.25-0.31). GPUCONV_RETIRE_DECODERS=0 leaves them to the exit.
// GPUCONV_TEARDOWN_PROBE=1 (commands.cpp) destroys and times them itself: no retiring then.
bool retire_decoders() {
  return env_int("GPUCONV_RETIRE_DECODERS", 0, 1, 1) == 1 && env_int("GPUCONV_TEARDOWN_PROBE", 0, 1, 0) == 0;
}

// GPUCONV_BATCH_STATS=1: seconds each stage's threads spent working and waiting, summed over
// the threads, printed at the end (where a batch's time goes, for tuning).
struct stage_stats {
  enum slot { read, cpu_decode, push_decoded, gpu_decode_thread, gpu_decode_input, gpu_decode_buffers, gpu_decode_setup,
              gpu_decode, push_staged, compute_input, compute, gpu_convolve, gpu_encode, encode, write, wait_write, count };
  static constexpr const char* names[count] = {"read (bytes)",       "read+decode (CPU)",    "decoders blocked",
                                               "GPU decode threads (all)", "GPU decode waits for JPEGs",
                                               "GPU decode waits for buffers",
                                               "GPU decode set-up (stream, nvJPEG objects)",
                                               "GPU decode stage",   "decode blocked",       "compute waits",
                                               "compute workers",    "of which GPU convolution (JPEGs)",
                                               "of which GPU encode (JPEGs)",                       "encode+write",
                                               "write+fsync",        "writers idle"};
  bool on = [] {
    const char* e = std::getenv("GPUCONV_BATCH_STATS");
    return e && *e == '1';
  }();
  std::atomic<long long> ns[count] = {};
  struct scope {
    stage_stats& s;
    slot k;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~scope() {
      if (s.on)
        s.ns[k] += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    }
  };
  scope time(slot k) { return scope{*this, k}; }
  void print(std::ostream& log) const {
    if (!on) return;
    log << "gpuconv: batch stage seconds (summed over threads):";
    for (int k = 0; k < count; ++k) log << " " << names[k] << " " << std::fixed << std::setprecision(2) << ns[k] * 1e-9 << ";";
    const mat_pool_stats p = mat_pool_statistics();
    log << " image buffers: " << p.mapped << " mapped, " << p.reused << " reused, " << p.released << " unmapped\n";
  }
};

bool has_extension(const fs::path& p, const std::vector<std::string>& extensions) {
  const std::string ext = to_lower(p.extension().string());
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

std::string format_duration(double s) {
  if (!(s >= 0) || s > 99 * 3600) return "--:--";
  const long t = long(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

}  // namespace

std::vector<batch_item> plan_batch(const fs::path& in_dir, const fs::path& out_dir, const batch_options& options,
                                   batch_report& report) {
  std::error_code ec;
  if (!fs::is_directory(in_dir, ec)) throw usage_error("IN_DIR '" + in_dir.string() + "' is not a directory");
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec))
    throw usage_error("OUT_DIR '" + out_dir.string() + "' exists and is not a directory");
  if (fs::exists(out_dir, ec) && fs::equivalent(in_dir, out_dir, ec))
    throw usage_error("OUT_DIR must differ from IN_DIR ('" + out_dir.string() + "')");
  const auto extensions = options.extensions.empty() ? default_extensions() : options.extensions;
  const fs::path out_canonical = fs::weakly_canonical(out_dir, ec);

  std::vector<fs::path> inputs;
  std::vector<batch_failure> listed_outside;  // --files-from entries that are not under IN_DIR
  auto consider = [&](const fs::directory_entry& e) {
    std::error_code e2;
    if (e.is_directory(e2) || is_temp_name(e.path()) || !has_extension(e.path(), extensions)) return;
    inputs.push_back(e.path());  // also dangling links and unreadable files: reported later
  };
  try {
    if (!options.files_from.empty()) {
      std::ifstream file;
      if (options.files_from != "-") {
        file.open(options.files_from);
        if (!file) throw input_error("--files-from '" + options.files_from + "': cannot be read: " + std::strerror(errno));
      }
      std::istream& list = options.files_from == "-" ? std::cin : file;
      const fs::path in_canonical = fs::weakly_canonical(in_dir, ec);
      for (std::string line; std::getline(list, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        const fs::path p = fs::path(line).is_absolute() ? fs::path(line) : in_dir / line;
        const fs::path rel = fs::weakly_canonical(p, ec).lexically_relative(in_canonical);
        if (rel.empty() || *rel.begin() == "..")
          listed_outside.push_back({line, "input '" + line + "': listed in --files-from but not under IN_DIR '" +
                                              in_dir.string() + "'"});
        else
          inputs.push_back(in_dir / rel);
      }
    } else if (options.recursive) {
      fs::recursive_directory_iterator it(in_dir, fs::directory_options::skip_permission_denied), end;
      for (; it != end; it.increment(ec)) {
        if (ec) throw fs::filesystem_error("scanning", in_dir, ec);
        std::error_code e2;
        if (it->is_directory(e2) && fs::weakly_canonical(it->path(), e2) == out_canonical) {
          it.disable_recursion_pending();  // OUT_DIR inside IN_DIR: never reprocess outputs
          continue;
        }
        consider(*it);
      }
    } else {
      for (const auto& e : fs::directory_iterator(in_dir)) consider(e);
    }
  } catch (const fs::filesystem_error& e) {
    throw input_error("IN_DIR '" + in_dir.string() + "': " + e.code().message());
  }
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  // this process's shard: the files whose relative path hashes to it (cli.hpp, shard_of)
  // (and, under --devices, this worker's share of it)
  if (options.shard_count > 1 || options.device_count > 1)
    inputs.erase(std::remove_if(inputs.begin(), inputs.end(),
                                [&](const fs::path& p) {
                                  return !takes_file(p.lexically_relative(in_dir).generic_string(), options);
                                }),
                 inputs.end());
  for (auto& f : listed_outside)
    if (takes_file(f.file, options)) {
      ++report.total;
      ++report.failed;
      report.failures.push_back(std::move(f));
    }

  std::set<fs::path> input_set;
  for (const auto& p : inputs) input_set.insert(fs::weakly_canonical(p, ec));
  std::set<fs::path> outputs;
  std::vector<batch_item> items;
  report.total += int(inputs.size());
  const bool mirror = options.recursive || !options.files_from.empty();  // keep the relative tree
  for (const auto& in : inputs) {
    fs::path out = out_dir / (mirror ? in.lexically_relative(in_dir) : in.filename());
    if (!options.format.empty()) out.replace_extension(options.format);
    auto fail = [&](const std::string& why) {
      ++report.failed;
      report.failures.push_back({in.string(), "input '" + in.string() + "': " + why});
    };
    const fs::path out_canonical_path = fs::weakly_canonical(out, ec);
    if (input_set.count(out_canonical_path)) {
      fail("output '" + out.string() + "' would overwrite an input");
    } else if (!outputs.insert(out_canonical_path).second) {
      fail("output '" + out.string() + "' is also the output of another input (use --format or rename)");
    } else if (fs::exists(fs::symlink_status(out, ec))) {
      if (options.existing == existing_policy::skip)
        ++report.skipped;
      else if (options.existing == existing_policy::fail)
        fail("output '" + out.string() + "' exists (use --overwrite or --skip-existing)");
      else
        items.push_back({in, out});
    } else {
      items.push_back({in, out});
    }
  }
  return items;
}

batch_report run_batch(const fs::path& in_dir, const fs::path& out_dir, const batch_options& options, convolver* c,
                       bool quiet, bool progress, std::ostream& log) {
  const auto start = std::chrono::steady_clock::now();
  batch_report report;
  std::mutex report_mutex;
  const std::vector<batch_item> items = plan_batch(in_dir, out_dir, options, report);
  use_recycling_mat_allocator(std::size_t(1) << 30);  // decoded images' buffers reused (mat_pool.hpp)
  const int jobs = options.jobs > 0 ? options.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  {
    std::lock_guard lock(report_mutex);
    for (auto& f : report.failures) {
      f.reason = printable(f.reason);
      log << "gpuconv: " << f.reason << "\n";
    }
  }

  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  stage_stats stats;
  auto record_failure = [&](std::size_t i, const std::string& why) {
    std::lock_guard lock(report_mutex);
    ++report.failed;
    report.failures.push_back({items[i].input.string(), printable(why)});
    if (progress) log << "\r\033[K";
    log << "gpuconv: " << printable(why) << "\n";
    if (options.stop_on_error) stop = true;
    ++finished;
  };
  // The reason, naming the file (the app layer's messages already do; the conv layer's do not).
  auto describe = [&](std::size_t i, const std::exception& e) {
    const std::string what = e.what();
    if (what.find(items[i].input.string()) != std::string::npos || what.find(items[i].output.string()) != std::string::npos)
      return what;
    return "input '" + items[i].input.string() + "': " + what;
  };

  const convolve_settings settings = c ? c->settings() : convolve_settings{};
  const bool gpu = c && c->settings().device == conv::backend::cuda;

  // The device buffers of the GPU decode stage: enough for the images waiting for a worker,
  // one a worker and one decode batch, so that no stage waits on another for a buffer forever.
  const int gpu_worker_count = gpu ? gpu_workers() : 0;
  const std::size_t gpu_batch = gpu_batch_size();
  const std::chrono::milliseconds full_batch_patience = decode_patience();
  const std::size_t staged_images = staged_image_count();
  const bool decode_stage = gpu && c->settings().decoder != jpeg_decoder::cpu &&
                            std::any_of(items.begin(), items.end(), [](const batch_item& it) { return is_jpeg_name(it.input); });
  const hybrid_setting hybrid = hybrid_decoder_count(jobs);
  const int hybrid_decoders = decode_stage ? hybrid.threads : 0;
  const int decode_stages = decode_stage_count(hybrid.forced ? hybrid_decoders : 0);
  // the stages that decode where the hardware decoder does, beside hybrid_decoders
  const int hardware_stages = hybrid_decoders > 0 ? std::min(decode_stages, stages_beside_hybrid(decode_stages)) : decode_stages;
  // (a pointer: left to the exit with batch_options::leave_buffers_to_exit)
  auto decoded_pool = std::make_unique<pipeline::device_pool>(staged_images + std::size_t(gpu_worker_count) +
                                                              decode_stages * gpu_batch + std::size_t(hybrid_decoders));
  pipeline::device_pool& decoded_on_gpu = *decoded_pool;
  // With the GPU decode stage the decoders' queue holds mostly JPEG bytes (~4 MB for 12 MP), and
  // room for a full batch per stage beside the decoders' own items: a batch larger than the
  // queue would never fill. Otherwise it holds decoded images (36 MB at 12 MP): one per decoder.
  const std::size_t decoded_capacity = std::size_t(jobs) + (decode_stage ? decode_stages * gpu_batch : 0);
  // (GPU without the decode stage: decoded images, deeper while they are small, decoded_byte_budget)
  const bool decoded_images_to_gpu = gpu && !decode_stage;
  // PNGs: zlib on the decoders and encoders, the filter step on the GPU (convolver::run_gpu_png)
  const bool png_to_gpu = gpu && convolver::png_on_gpu();
  bounded_queue<work> decoded{decoded_capacity, decoded_images_to_gpu ? decoded_byte_budget() : 0},
      staged{staged_images}, convolved{std::size_t(jobs)};
  bounded_queue<work>& to_compute = decode_stage ? staged : decoded;
  std::atomic<std::size_t> next{0};
  std::atomic<int> decoders_left{jobs};
  const int decoding_at_startup = decode_stage && settings.decoder == jpeg_decoder::automatic ? startup_decoders(jobs) : jobs;
  auto since_start_ns = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  };
  std::atomic<long long> gpu_decoder_ready_ns{-1};  // when a decoder first found nvJPEG ready
  std::atomic<long long> last_gpu_decode_ns{-1};    // when the GPU's decoder last finished a batch
  std::atomic<int> jpegs_on_cpu{0};
  std::atomic<int> gpu_decoded{0}, convolved_count{0};  // for the stats' timeline

  auto decoder = [&](int j) {
    yield_to_compute();
    if (j >= decoding_at_startup)  // leave the CPU to nvJPEG's start-up (startup_decoders())
      while (!c->gpu_jpeg_settled() && next < items.size() && !stop && !interrupted())
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (std::size_t i; !stop && !interrupted() && (i = next++) < items.size();) {
      try {
        cv::Mat m;
        // JPEGs go to the GPU's decoder once nvJPEG has loaded (--decoder gpu: waits for it);
        // until then the CPU decodes them, so that its start-up costs no throughput
        const bool jpeg = c && is_jpeg_name(items[i].input);
        if (jpeg && (settings.decoder == jpeg_decoder::gpu ? c->gpu_jpeg() : c->gpu_jpeg_ready())) {
          if (stats.on && gpu_decoder_ready_ns < 0) {
            long long unset = -1;
            gpu_decoder_ready_ns.compare_exchange_strong(unset, since_start_ns());
          }
          std::vector<unsigned char> bytes;
          pipeline::jpeg_header h;
          {
            auto t = stats.time(stage_stats::read);
            bytes = read_image_bytes(items[i].input);
            h = pipeline::jpeg_headers(bytes.data(), bytes.size());
          }
          if (h.gpu_decodable()) {
            auto t = stats.time(stage_stats::push_decoded);
            decoded.push(work{i, jpeg_file{std::move(bytes), h}});
            continue;
          }
          auto t = stats.time(stage_stats::cpu_decode);
          // progressive, gray, CMYK, damaged, ...: libjpeg as always, from the file: OpenCV's
          // decoder on bytes in memory (imdecode) decodes a truncated JPEG without libjpeg's
          // "Premature end of JPEG file" warning, so the truncation would go unreported (the GPU
          // app test "damaged JPEGs" failed that way on the H100 in session 32)
          m = read_image(items[i].input);
          ++jpegs_on_cpu;
        } else if (png_to_gpu && is_png_name(items[i].input)) {
          // zlib on this thread, the filters on the GPU; anything png_codec does not take (or
          // a damaged file) OpenCV decodes, and reports, as always
          auto t = stats.time(stage_stats::cpu_decode);
          const std::vector<unsigned char> bytes = read_image_bytes(items[i].input);
          if (auto s = pipeline::inflate_png(bytes.data(), bytes.size())) {
            if (s->none_or_sub()) {
              const std::size_t size = s->rows.size();
              auto tp = stats.time(stage_stats::push_decoded);
              to_compute.push(work{i, png_input{std::move(*s)}}, size);
              continue;
            }
            m.create(s->height, s->width, CV_MAKETYPE(s->depth == 16 ? CV_16U : CV_8U, s->channels));
            if (!pipeline::unfilter_png(*s, m.data)) m = read_image(items[i].input);
          } else {
            m = read_image(items[i].input);
          }
        } else {
          auto t = stats.time(stage_stats::cpu_decode);
          if (jpeg) ++jpegs_on_cpu;
          if (const int pages = tiff_page_count(items[i].input); pages > 1)  // not its first page alone
            throw input_error("input '" + items[i].input.string() + "': a stack of " + std::to_string(pages) +
                              " pages; batch takes single images (convolve a stack with gpuconv STACK KERNEL OUT)");
          m = read_image(items[i].input);
        }
        // decoded images go straight to the compute workers (past the GPU decode stages)
        auto t = stats.time(stage_stats::push_decoded);
        if (c && !gpu) {
          to_compute.push(work{i, c->planes(m)});
        } else {
          const std::size_t bytes = m.total() * m.elemSize();
          to_compute.push(work{i, std::move(m)}, bytes);
        }
      } catch (const std::exception& e) {
        record_failure(i, describe(i, e));
      }
    }
    if (--decoders_left == 0) decoded.close();
  };
  // The GPU's JPEG decode stages (threads, each with one of nvJPEG's decoder states): batches of JPEGs
  // from the decoders' queue (which holds nothing else: the CPU's decoded images go straight to
  // the workers) decoded into device buffers of the pool. A batch nvJPEG refuses goes on
  // undecoded (the CPU decodes it in the worker).
  if (decode_stage) c->start_gpu_jpeg(decode_stages, hardware_stages);
  std::atomic<int> decode_stages_left{decode_stages + hybrid_decoders};
  // the last decode stage (or GPU-hybrid decoder) has ended
  auto end_of_gpu_decoding = [&] {
    staged.close();
#ifdef GPUCONV_HAVE_NVJPEG
    if (options.leave_buffers_to_exit && decode_stage && retire_decoders()) pipeline::nvjpeg_retire_decoders();
#endif
  };
  std::atomic<int> hybrid_decoded{0};
  // the CPU decoders are done and their queue empty (a short batch may end before nvJPEG loads)
  auto drained = [&] { return decoders_left == 0 && decoded.size() == 0; };
  // until nvJPEG has loaded (available or not), unless the batch stops or is over first
  auto wait_for_nvjpeg = [&] {
    while (!c->gpu_jpeg_settled() && !stop && !interrupted() && !drained())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  // the decode stages' takes from the decoders' queue, summed (GPUCONV_BATCH_STATS)
  std::mutex takes_mutex;
  bounded_queue<work>::pop_timing takes;
  auto gpu_decoder = [&](int k) {
    auto whole = stats.time(stage_stats::gpu_decode_thread);  // the parts below, and what they leave out
    bounded_queue<work>::pop_timing my_takes;
#ifdef GPUCONV_HAVE_NVJPEG
    std::unique_ptr<cuda_stream> stream;
    std::unique_ptr<pipeline::jpeg_gpu> nvjpeg;
    // a stage past hardware_stages ends where the hardware decoder turns out to decode (nvJPEG
    // loaded); elsewhere, or on a short batch that is over first, it decodes as the others
    bool ended = false;
    if (k >= hardware_stages) {
      wait_for_nvjpeg();
      ended = c->gpu_jpeg_settled() && pipeline::jpeg_gpu::hardware_decoder();
    }
    for (std::vector<work> batch; !ended;) {
      {
        auto t = stats.time(stage_stats::gpu_decode_input);
        batch = decoded.pop_up_to(gpu_batch, full_batch_patience, stats.on ? &my_takes : nullptr);
      }
      if (batch.empty()) break;
      if (interrupted()) continue;  // drain: the decoders are stopping
      std::vector<pipeline::jpeg_gpu::input> inputs;
      std::vector<std::pair<work*, std::shared_ptr<unsigned char>>> leases;
      try {
        for (work& w : batch)
          if (auto* f = std::get_if<jpeg_file>(&w.image)) {
            const int h = f->header.height, wd = f->header.width;
            auto t = stats.time(stage_stats::gpu_decode_buffers);
            auto buffer = decoded_on_gpu.acquire(std::size_t(3) * h * wd);
            inputs.push_back({f->bytes.data(), f->bytes.size(), buffer.get(), h, wd});
            leases.emplace_back(&w, std::move(buffer));
          }
        if (!inputs.empty()) {
          if (!nvjpeg) {
            // once per stage (a 480-photo run once lost ~1.6 s a stage outside the timed parts)
            auto t = stats.time(stage_stats::gpu_decode_setup);
            stream = decoder_stream();
            nvjpeg = std::make_unique<pipeline::jpeg_gpu>(stream->get());
          }
          auto t = stats.time(stage_stats::gpu_decode);
          if (nvjpeg->decode(inputs)) {
            for (auto& [w, buffer] : leases) {
              const auto& h = std::get<jpeg_file>(w->image).header;
              w->image = device_jpeg{std::move(buffer), h.height, h.width};
            }
            gpu_decoded += int(inputs.size());
          }
          if (stats.on) last_gpu_decode_ns = since_start_ns();
        }
      } catch (const std::exception&) {
        // nvJPEG or the pool failed: the CPU decodes these files in the workers
      }
      leases.clear();
      auto t = stats.time(stage_stats::push_staged);
      for (work& w : batch) staged.push(std::move(w));
    }
#endif
    {
      std::lock_guard lock(takes_mutex);
      takes += my_takes;
    }
    if (--decode_stages_left == 0) end_of_gpu_decoding();
  };
  // GPU-hybrid decoders (hybrid_decoder_count()): one JPEG at a time from the same queue, once
  // nvJPEG has loaded; one that fails leaves the JPEG to the CPU, as a batch does.
  auto hybrid_decoder = [&] {
#ifdef GPUCONV_HAVE_NVJPEG
    wait_for_nvjpeg();
    std::unique_ptr<cuda_stream> stream;
    std::unique_ptr<pipeline::jpeg_hybrid> nvjpeg;
    // by default only beside the hardware decoder (where the handle is GPU-hybrid, its batches
    // already take the CPU's share)
    const bool wanted = hybrid.forced || pipeline::jpeg_gpu::hardware_decoder();
    try {
      if (wanted && !stop && !interrupted() && !drained()) {
        stream = decoder_stream();
        nvjpeg = std::make_unique<pipeline::jpeg_hybrid>(stream->get());
      }
    } catch (const std::exception&) {
      nvjpeg.reset();  // the hardware decoder's stages and the CPU go on without it
    }
    // without a decoder it leaves the queue to the hardware decoder's stages, or where there are
    // none, passes the JPEGs on undecoded (the CPU decodes them in the workers)
    if (nvjpeg || decode_stages == 0)
      for (std::vector<work> one; !(one = decoded.pop_up_to(1)).empty();) {
        work& w = one.front();
        if (auto* f = std::get_if<jpeg_file>(&w.image); f && nvjpeg && !interrupted()) {
          try {
            const int h = f->header.height, wd = f->header.width;
            auto buffer = decoded_on_gpu.acquire(std::size_t(3) * h * wd);
            if (nvjpeg->decode({f->bytes.data(), f->bytes.size(), buffer.get(), h, wd})) {
              w.image = device_jpeg{std::move(buffer), h, wd};
              ++gpu_decoded;
              ++hybrid_decoded;
            }
          } catch (const std::exception&) {
            // as a failed batch: the CPU decodes this file in the worker
          }
        }
        staged.push(std::move(w));
      }
#endif
    if (--decode_stages_left == 0) end_of_gpu_decoding();
  };

  // Compute workers: one per convolver (a plan is not thread-safe). On the GPU several
  // (gpu_workers()), each with its own stream, plans and encoder state: while one waits for
  // a copy or an encode, another's kernels run.
  std::vector<convolver*> workers;
  std::vector<std::unique_ptr<convolver>> extra;
  if (c) {
    workers.push_back(c);
    for (int w = 1; w < gpu_worker_count; ++w) {
      extra.push_back(std::make_unique<convolver>(c->kernel_used(), c->settings()));
      workers.push_back(extra.back().get());
    }
  }
  std::atomic<int> computers_left{std::max<int>(1, int(workers.size()))};
  auto compute = [&](convolver* cw) {
    convolver::stage_times times;  // GPU-decoded JPEGs' convolution and encode (GPUCONV_BATCH_STATS)
    if (cw) {
      try {
        cw->warm_up();
      } catch (const std::exception&) {
        // reported by the first image's plan, which names the file
      }
    }
    for (;;) {
      std::optional<work> w;
      {
        auto t = stats.time(stage_stats::compute_input);
        w = to_compute.pop();
      }
      if (!w) break;
      if (interrupted()) continue;  // drain: the decoders are stopping
      auto t = stats.time(stage_stats::compute);
      try {
        if (!cw) {
          // --io-only: nothing to do
        } else if (!gpu) {
          cw->run(std::get<planar_image>(w->image));
        } else {
          // the output image, or its bytes when the GPU encoded it (JPEG outputs)
          auto keep = [&](convolver::jpeg_output o) {
            if (!o.encoded.empty())
              w->image = encoded_file{std::move(o.encoded), o.image.clipped};
            else
              w->image = std::move(o.image);
          };
          const bool jpeg_out = is_jpeg_name(items[w->index].output), png_out = is_png_name(items[w->index].output);
          // the output as PNG scanlines, or the image (convolver::png_result)
          auto keep_png = [&](convolver::png_result r) {
            if (!r.scanlines.empty())
              w->image = std::move(r);
            else
              w->image = std::move(r.image);
          };
          if (auto* d = std::get_if<device_jpeg>(&w->image)) {
            if (png_out)
              keep_png(cw->run_gpu_decoded_png(d->planes.get(), d->height, d->width));
            else
              keep(cw->run_gpu_decoded(d->planes.get(), d->height, d->width, jpeg_out, stats.on ? &times : nullptr));
          } else {
            // a JPEG the GPU did not decode: libjpeg decodes it (and reports damage) as always
            if (std::holds_alternative<jpeg_file>(w->image)) w->image = read_image(items[w->index].input);
            if (auto* p = std::get_if<png_input>(&w->image)) {
              if (jpeg_out)
                keep(cw->run_gpu_to_jpeg(p->scanlines));
              else
                keep_png(cw->run_gpu_png(p->scanlines, png_out));
            } else {
              const cv::Mat& m = std::get<cv::Mat>(w->image);
              if (jpeg_out)
                keep(cw->run_gpu_to_jpeg(m));  // encoded on the GPU once nvJPEG is ready
              else if (png_out)
                keep_png(cw->run_gpu_png(m, true));
              else
                w->image = cw->run_gpu(m);
            }
          }
        }
        ++convolved_count;
        convolved.push(std::move(*w));
      } catch (const std::exception& e) {
        record_failure(w->index, describe(w->index, e));
      }
    }
    stats.ns[stage_stats::gpu_convolve] += (long long)(times.convolve * 1e9);
    stats.ns[stage_stats::gpu_encode] += (long long)(times.encode * 1e9);
    if (--computers_left == 0) convolved.close();
  };
  // The outputs' directory fsyncs, shared by the writers (atomic_write.hpp: each output's bytes
  // are synced before its rename, the renames together); all synced before the batch reports.
  const bool shared_dir_syncs = share_directory_syncs();
  directory_syncs dir_syncs;
  // an output done: under its name (and synced, or its directory's sync noted)
  auto output_done = [&](std::size_t index, long long bytes_out, long long clipped) {
    std::error_code size_ec;
    const auto in_bytes = fs::file_size(items[index].input, size_ec);
    std::lock_guard lock(report_mutex);
    ++report.done;
    ++finished;
    report.bytes_out += bytes_out;
    if (!size_ec) report.bytes_in += (long long)in_bytes;
    if (clipped) {
      report.clipped_pixels += clipped;
      ++report.clipped_files;
    }
  };
  // outputs written into their temp files, for the committers (committer_count())
  struct to_commit {
    std::size_t index;
    staged_output file;
    long long bytes_out, clipped;
  };
  const int committers = committer_count();
  bounded_queue<to_commit> commits{std::size_t(std::max(1, 2 * committers))};
  const int writers = writer_count(jobs);
  std::atomic<int> writers_left{writers};
  auto encoder = [&] {
    yield_to_compute();
    for (;;) {
      std::optional<work> w;
      {
        auto t = stats.time(stage_stats::wait_write);
        w = convolved.pop();
      }
      if (!w) break;
      if (interrupted()) continue;
      const batch_item& item = items[w->index];
      try {
        cv::Mat out;
        long long clipped = 0;
        std::vector<unsigned char> encoded;
        int encoded_channels = 3, encoded_depth = CV_8U;  // of an output encoded before this thread (GPU JPEG: BGR)
        auto t_encode = stats.time(stage_stats::encode);
        if (auto* p = std::get_if<planar_image>(&w->image)) {
          output_image o = from_planes(*p, settings);
          out = std::move(o.image);
          clipped = o.clipped;
        } else if (auto* o = std::get_if<output_image>(&w->image)) {
          out = std::move(o->image);
          clipped = o->clipped;
        } else if (auto* e = std::get_if<encoded_file>(&w->image)) {
          encoded = std::move(e->bytes);
          clipped = e->clipped;
        } else if (auto* p = std::get_if<convolver::png_result>(&w->image)) {
          encoded = p->file();
          encoded_channels = p->channels;
          encoded_depth = p->depth == 16 ? CV_16U : CV_8U;
          clipped = p->image.clipped;
        } else {
          out = std::move(std::get<cv::Mat>(w->image));
        }
        w->image = cv::Mat();  // free the planes before encoding
        const bool overwrite = options.existing == existing_policy::overwrite;
        std::error_code ec;
        if (encoded.empty()) {
          check_output_format(item.output, out.depth(), out.channels());
          encoded = encode_output(item.output, out, options.codec);
          out = cv::Mat();
        } else {
          check_output_format(item.output, encoded_depth, encoded_channels);
        }
        {
          auto t = stats.time(stage_stats::write);
          fs::create_directories(item.output.parent_path(), ec);
          if (committers > 0) {
            staged_output file = stage_output(item.output, {{encoded.data(), encoded.size()}}, overwrite);
            commits.push(to_commit{w->index, std::move(file), (long long)encoded.size(), clipped});
            continue;
          }
          write_bytes_atomic(item.output, encoded, overwrite, false, shared_dir_syncs ? &dir_syncs : nullptr);
        }
        output_done(w->index, (long long)encoded.size(), clipped);
      } catch (const std::exception& e) {
        if (interrupted()) continue;  // dropped by the interrupt, not a failure of the file
        record_failure(w->index, describe(w->index, e));
      }
    }
    if (--writers_left == 0) commits.close();
  };
  auto committer = [&] {
    for (;;) {
      std::optional<to_commit> c;
      {
        auto t = stats.time(stage_stats::wait_write);
        c = commits.pop();
      }
      if (!c) break;
      if (interrupted()) continue;  // its temp file goes with it
      try {
        {
          auto t = stats.time(stage_stats::write);
          commit_output(c->file, shared_dir_syncs ? &dir_syncs : nullptr);
        }
        output_done(c->index, c->bytes_out, c->clipped);
      } catch (const std::exception& e) {
        if (interrupted()) continue;
        record_failure(c->index, describe(c->index, e));
      }
    }
  };

  std::atomic<bool> all_done{false};
  std::thread progress_thread;
  if (progress && !items.empty()) {
    progress_thread = std::thread([&] {
      while (!all_done) {
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const int n = finished, total = int(items.size());
        const double rate = t > 0 ? n / t : 0;
        constexpr int width = 30;
        const int bar = total ? width * n / total : width;
        std::ostringstream line;
        line << "\r\033[K[" << std::string(bar, '=') << std::string(width - bar, ' ') << "] " << n << "/" << total
             << "  " << std::fixed << std::setprecision(1) << rate << " img/s  ETA "
             << (rate > 0 ? format_duration((total - n) / rate) : std::string("--:--"));
        {
          std::lock_guard lock(report_mutex);
          log << line.str() << std::flush;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      std::lock_guard lock(report_mutex);
      log << "\r\033[K" << std::flush;
    });
  }

  // GPUCONV_BATCH_STATS=1: every 100 ms, how far each stage has come and what waits between them,
  // so that a stall shows which stage stopped (printed at the end).
  std::ostringstream timeline;
  std::thread sampler;
  if (stats.on)
    sampler = std::thread([&] {
      for (int k = 1; !all_done; ++k) {
        const auto at = start + std::chrono::milliseconds(100 * k);
        while (!all_done && std::chrono::steady_clock::now() < at) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (all_done) break;
        timeline << " " << std::fixed << std::setprecision(1) << 0.1 * k << ":" << std::min<std::size_t>(next, items.size())
                 << "," << gpu_decoded << "," << convolved_count << "," << finished << "[" << decoded.size() << ","
                 << staged.size() << "," << convolved.size() << "]";
      }
    });

  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) threads.emplace_back(decoder, j);
  if (decode_stage)
    for (int k = 0; k < decode_stages; ++k) threads.emplace_back(gpu_decoder, k);
  for (int k = 0; k < hybrid_decoders; ++k) threads.emplace_back(hybrid_decoder);
  if (workers.empty())
    threads.emplace_back(compute, nullptr);
  else
    for (convolver* cw : workers) threads.emplace_back(compute, cw);
  for (int j = 0; j < writers; ++j) threads.emplace_back(encoder);
  for (int j = 0; j < committers; ++j) threads.emplace_back(committer);
  for (auto& t : threads) t.join();
  {
    auto t = stats.time(stage_stats::write);
    dir_syncs.sync();  // every output reported done is durable under its name
  }
  all_done = true;
  if (progress_thread.joinable()) progress_thread.join();
  if (sampler.joinable()) sampler.join();

  stats.print(log);
  if (stats.on)
    log << "gpuconv: batch timeline (seconds: files taken, GPU-decoded, convolved, done [decoders' queue, decode stages' queue, "
           "convolved]):" << timeline.str() << "\n";
  if (stats.on && takes.takes)
    log << "gpuconv: GPU decode stages took " << takes.takes << " batches, " << std::setprecision(2)
        << double(takes.taken) / takes.takes << " JPEGs each (" << double(takes.found) / takes.takes
        << " queued); seconds summed: taking the queue's lock " << takes.lock << ", waiting for a JPEG " << takes.empty
        << ", for a full batch " << takes.patience << "\n";
#ifdef GPUCONV_HAVE_NVJPEG
  if (stats.on && gpu) log << "gpuconv: " << pipeline::nvjpeg_statistics() << "\n";
#endif
  if (stats.on && decode_stage)
    log << "gpuconv: JPEGs decoded on the CPU: " << jpegs_on_cpu << " (" << decoding_at_startup
        << " decoders during nvJPEG's start-up); nvJPEG's decoder first used at " << std::setprecision(3)
        << gpu_decoder_ready_ns * 1e-9 << " s, last at " << last_gpu_decode_ns * 1e-9 << " s; by the GPU-hybrid decoder "
        << hybrid_decoded << " (" << hybrid_decoders << " threads)\n";
  report.interrupted = interrupted();
  report.not_processed = report.total - report.done - report.skipped - report.failed;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.leave_buffers_to_exit) {  // the process ends next: the exit releases them with the context
    leave_to_exit(std::move(decoded_pool));
    leave_to_exit(std::move(extra));
  }
  (void)quiet;
  return report;
}

void print_summary(const batch_report& r, bool quiet, std::ostream& log) {
  if (!quiet || r.failed || r.interrupted) {
    log << "gpuconv: batch " << (r.interrupted ? "interrupted: " : "") << "done " << r.done << ", skipped "
        << r.skipped << ", failed " << r.failed;
    if (r.not_processed) log << ", not processed " << r.not_processed;
    log << " (" << std::fixed << std::setprecision(2) << r.seconds << " s";
    if (r.seconds > 0 && r.done) log << ", " << std::setprecision(2) << r.done / r.seconds << " images/s";
    log << ")\n";
  }
  if (!quiet && r.clipped_pixels)
    log << "gpuconv: " << r.clipped_pixels << " pixels clipped in " << r.clipped_files << " file"
        << (r.clipped_files == 1 ? "" : "s") << "\n";
  if (!quiet)
    for (const auto& d : r.devices)
      log << "gpuconv:   GPU " << d.gpu << ": done " << d.done << ", skipped " << d.skipped << ", failed " << d.failed
          << " (" << std::fixed << std::setprecision(2) << d.seconds << " s)\n";
  if (r.failed) {
    log << "gpuconv: failed files:\n";
    for (const auto& f : r.failures) log << "  " << f.reason << "\n";
  }
}

namespace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char ch : printable(text)) {  // printable: no control bytes, no raw non-UTF-8
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

std::string summary_json(const batch_report& r, const batch_options& options) {
  std::ostringstream s;
  s << "{\n  \"shard\": \"" << options.shard_index << "/" << options.shard_count << "\",\n"
    << "  \"total\": " << r.total << ",\n  \"processed\": " << r.done << ",\n  \"skipped\": " << r.skipped
    << ",\n  \"failed\": " << r.failed << ",\n  \"not_processed\": " << r.not_processed
    << ",\n  \"interrupted\": " << (r.interrupted ? "true" : "false") << ",\n  \"bytes_in\": " << r.bytes_in
    << ",\n  \"bytes_out\": " << r.bytes_out << ",\n  \"clipped_pixels\": " << r.clipped_pixels
    << ",\n  \"seconds\": " << std::fixed << std::setprecision(3) << r.seconds << ",\n  \"failures\": [";
  for (std::size_t i = 0; i < r.failures.size(); ++i)
    s << (i ? "," : "") << "\n    {\"file\": " << json_string(r.failures[i].file)
      << ", \"reason\": " << json_string(r.failures[i].reason) << "}";
  s << (r.failures.empty() ? "" : "\n  ") << "]";
  if (!r.devices.empty()) {  // --devices: per GPU
    s << ",\n  \"devices\": [";
    for (std::size_t i = 0; i < r.devices.size(); ++i) {
      const auto& d = r.devices[i];
      s << (i ? "," : "") << "\n    {\"gpu\": " << json_string(d.gpu) << ", \"processed\": " << d.done
        << ", \"skipped\": " << d.skipped << ", \"failed\": " << d.failed << ", \"seconds\": " << std::fixed
        << std::setprecision(3) << d.seconds << "}";
    }
    s << "\n  ]";
  }
  s << "\n}\n";
  return s.str();
}

int exit_code_for(const batch_report& r) {
  if (r.interrupted) return interrupt_exit_code();
  return r.failed ? exit_failure : exit_ok;
}

}  // namespace gpuconv::app
