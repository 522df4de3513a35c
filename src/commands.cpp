#include "commands.hpp"
#include "devices.hpp"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "atomic_write.hpp"
#include "batch.hpp"
#include "cuda_startup.hpp"
#include "errors.hpp"
#include "fft/device/cuda_check.hpp"
#include "image_io.hpp"
#include "interrupt.hpp"
#include "gpu_convolver.hpp"
#include "jpeg_header.hpp"
#include "kernel_io.hpp"
#include "named_kernels.hpp"
#include "stack_io.hpp"
#include "stage_timer.hpp"
#ifdef GPUCONV_HAVE_NVJPEG
#include "jpeg_gpu.hpp"
#endif

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

// Joins a thread on every path out of the scope it is made in.
struct thread_joiner {
  std::thread& t;
  ~thread_joiner() {
    if (t.joinable()) t.join();
  }
};

// Images at or below this many pixels run on the CPU under --device auto in the single-image
// command: CUDA's start-up (~0.1 s) costs more than the CPU backend needs for them.
constexpr long long small_image_pixels = 1 << 18;

std::string gpu_jpeg_line() {
#ifdef GPUCONV_HAVE_NVJPEG
  const auto& s = pipeline::nvjpeg_library();
  return std::string("GPU JPEG: ") + (s.available ? s.text : "unavailable (" + s.text + ")");
#else
  return "GPU JPEG: not built (nvjpeg.h was not found at build time)";
#endif
}

}  // namespace

kernel load_kernel(const cli_options& o) {
  kernel k = resolve_kernel(o.kernel);
  if (o.normalize) normalize(k);
  return k;
}

void refuse_output_over_input(const cli_options& o) {
  const fs::path in(o.input), out(o.output);
  std::error_code ec;
  if (in == out || (fs::exists(out, ec) && fs::equivalent(in, out, ec)) ||
      fs::weakly_canonical(in, ec) == fs::weakly_canonical(out, ec))
    throw usage_error("output '" + o.output + "' is the input file; refusing to overwrite it");
}

bool process_ends_after_command = false;

std::chrono::steady_clock::time_point main_started = std::chrono::steady_clock::now();

double seconds_to_main() {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  // the fields after the command name (which may hold spaces), from the 3rd; the 22nd is the
  // start time in clock ticks since boot
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 1));
  std::string f;
  for (int i = 3; i <= 22 && (fields >> f); ++i)
    if (i == 22) {
      const long ticks = ::sysconf(_SC_CLK_TCK);
      timespec now{};
      if (ticks <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
      const double since_start = double(now.tv_sec) + now.tv_nsec * 1e-9 - std::stod(f) / double(ticks);
      return std::max(0.0, since_start - seconds_since(main_started));
    }
  return -1;
}

int run_convolve(const cli_options& o, std::ostream& err) {
  stage_timer timer(o.timing);
  const fs::path in(o.input), out(o.output);
  // a multi-page TIFF: 3D (volume_commands.cpp), whose path checks include the one below
  if (is_stack_file(in)) return run_stack_convolve(o, timer, err);
  refuse_output_over_input(o);
  kernel k = load_kernel(o);
  convolve_settings s = o.settings;
  // one image: the host side of the GPU's staging copies may take every core
  s.copy_threads = int(std::min(16u, std::max(1u, std::thread::hardware_concurrency())));
  s.codec.jpeg_threads = s.copy_threads;  // and its JPEG encode, in strips
  s.pinned_download = false;               // one download: no staging to allocate (convolve_image.hpp)
  // --device auto runs the image on the CPU when the CPU backend is expected to be done before
  // CUDA has started (cpu_before_cuda_starts: a 12 MP photo with a small or separable kernel on a
  // many-core machine; any image of at most 2^18 pixels).
  if (s.device == conv::backend::automatic) {
    const auto size = peek_image_size(in);
    if (size && (size->width * size->height <= small_image_pixels ||
                 cpu_before_cuda_starts(size->height, size->width, k, s.threads)))
      s.device = conv::backend::cpu;
  }
  // A single JPEG is decoded by the CPU unless --decoder gpu: nvJPEG's start-up (its handles
  // and decoder state, 1.0-1.6 s on the H100) is longer than libjpeg's decode of a 12 MP
  // photo (0.1-0.16 s). Batches amortise it (batch.cpp).
  const bool jpeg_candidate = s.device != conv::backend::cpu && s.decoder == jpeg_decoder::gpu && is_jpeg_name(in);
  timer.mark("setup");

  // CUDA's start-up (the driver, the context, and nvJPEG's handles for --decoder gpu) on
  // another thread, while this one reads and decodes the file.
  cuda_startup init;
  if (s.device != conv::backend::cpu) {
#ifdef GPUCONV_HAVE_NVJPEG
    init.start([&](bool) {
      if (jpeg_candidate) (void)pipeline::nvjpeg_library();
    });
#else
    init.start();
#endif
  }
  bool cuda = false;
  auto wait_init = [&] {
    init.wait();
    if (s.device != conv::backend::cpu) {  // resolve_device asks again: answered at once now
      s.device = resolve_device(s.device, o.quiet, err);
      cuda = s.device == conv::backend::cuda;
      // the wait only: the start-up itself ran beside the stages before
      timer.mark("cuda-wait", init.note() + "; device " + (cuda ? "cuda" : "cpu"));
    }
    if (s.decoder == jpeg_decoder::gpu && !cuda) throw usage_error("--decoder gpu needs --device cuda (or auto with a GPU)");
  };

  // A JPEG the GPU may decode is read as bytes; everything else (and a JPEG the GPU refuses)
  // is read and decoded by OpenCV from the file, as read_image always has (libjpeg then
  // reports a truncated or corrupt file in its own words).
  std::vector<unsigned char> bytes;
  pipeline::jpeg_header header;
  if (jpeg_candidate) {
    wait_init();
    if (!convolver::gpu_jpeg_available()) throw error("--decoder gpu: " + gpu_jpeg_line(), exit_failure);
    bytes = read_image_bytes(in);
    timer.mark("read", std::to_string(bytes.size()) + " bytes");
    header = pipeline::jpeg_headers(bytes.data(), bytes.size());
  }

  output_image result;
  std::vector<unsigned char> encoded;
  std::optional<convolver> c;
  auto convolution_error = [&](const std::invalid_argument& e) {  // the convolution layer's checks: name the files
    return usage_error("input '" + o.input + "' with kernel '" + o.kernel + "': " + e.what());
  };
  bool done = false;
  if (jpeg_candidate && header.gpu_decodable()) {
    c.emplace(k, s);
    if (c->gpu_jpeg()) {
      check_output_format(out, output_cv_depth(s.depth, CV_8U), 3);
      convolver::stage_times times;
      std::vector<convolver::jpeg_output> r;
      try {
        r = c->run_gpu_jpegs({{&bytes, header.height, header.width, is_jpeg_name(out)}}, o.timing ? &times : nullptr);
      } catch (const std::invalid_argument& e) {
        throw convolution_error(e);
      }
      if (r[0].decoded) {
        timer.add("decode", times.decode, std::string("GPU, nvJPEG ") + convolver::gpu_jpeg_decoder());
        timer.add("convolve", times.convolve, "GPU, narrow samples in and out");
        if (!r[0].encoded.empty()) {
          timer.add("encode", times.encode, "GPU, nvJPEG");
        } else {
          timer.add("download", times.download);
        }
        timer.mark("(rest)", "host work between the stages");
        result = std::move(r[0].image);
        encoded = std::move(r[0].encoded);
        done = true;
      }
    }
  }
  if (!done) {  // not a JPEG, or one nvJPEG does not take (progressive, gray, CMYK, damaged): OpenCV
    bytes = {};
    const cv::Mat image = read_image(in);
    timer.mark("read+decode", "CPU, OpenCV");
    check_output_format(out, output_cv_depth(s.depth, image.depth()), image.channels());
    wait_init();
    if (!c) c.emplace(std::move(k), s);
    try {
      if (cuda && is_png_name(out) && c->png_on_gpu()) {
        // a PNG output: filtered and deflated on the GPU where it can be (convolver::run_gpu_png)
        convolver::png_result r = c->run_gpu_png(image, true);
        timer.mark("upload+convolve+PNG", r.scanlines.empty() ? "GPU" : r.zlib ? "GPU: filter, deflate" : "GPU: filter");
        if (!r.scanlines.empty()) {
          encoded = r.file();
          timer.mark("encode", r.zlib ? "CPU: the PNG's chunks" : "CPU: zlib's deflate");
        }
        result = std::move(r.image);
      } else if (cuda) {
        convolver::stage_times times;
        result = c->run_gpu(image, o.timing ? &times : nullptr);
        timer.add("upload", times.upload, "from pageable memory");
        timer.add("convolve", times.convolve, "GPU, narrow samples in and out");
        timer.add("download", times.download, times.pinned_download ? "pinned staging" : "into the result, no pinned staging");
        timer.mark("(rest)", "host work between the stages");
      } else {
        result = convolve_image(image, *c);
        timer.mark("convolve", "CPU backend");
      }
    } catch (const std::invalid_argument& e) {
      throw convolution_error(e);
    }
  }
  if (interrupted()) return interrupt_exit_code();
  if (encoded.empty() && tiff_written_directly(out, result.image)) {
    timer.mark("encode", "none: gpuconv's TIFF writer, uncompressed float");
    const std::uint64_t size = write_tiff_pages(out, {result.image});
    timer.mark("write", std::to_string(size) + " bytes, from the image's rows");
  } else {
    if (encoded.empty()) {
      encoded = encode_output(out, result.image, s.codec);
      timer.mark("encode", "CPU, OpenCV");
    }
    write_bytes_atomic(out, encoded, true);
    timer.mark("write", std::to_string(encoded.size()) + " bytes");
  }
  // The process ends after this command (main): its GPU buffers are left to the exit, which
  // releases them with the context (freeing them one by one took 28 ms on the H100; the exit
  // took no longer with them held).
  if (cuda && c && process_ends_after_command) leave_to_exit(std::move(c));
  if (interrupted()) return interrupt_exit_code();
  if (result.clipped && !o.quiet) err << "gpuconv: " << result.clipped << " pixels clipped\n";
  timer.print(err);
  return exit_ok;
}

int run_batch_command(const cli_options& o, std::ostream& err) {
  batch_options options = o.batch;
  const bool worker = read_worker_role(options);  // one GPU's share under --devices (devices.hpp)
  if (!o.batch.format.empty())
    check_output_format(fs::path("x" + o.batch.format), CV_8U, 3);  // the format exists at all
  std::optional<kernel> k;
  convolve_settings s = o.settings;
  double kernel_seconds = 0, driver_seconds = 0;
  if (!o.batch.io_only) {
    auto t = clock_type::now();
    k = load_kernel(o);
    kernel_seconds = seconds_since(t);
    t = clock_type::now();
    s.device = resolve_device(s.device, o.quiet || worker, err);
    driver_seconds = seconds_since(t);
    if (!worker && s.device == conv::backend::cuda) {
      int visible = 0;
      if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
      const auto workers = device_workers(o.batch.devices, visible, std::getenv("CUDA_VISIBLE_DEVICES"));
      if (!workers.empty()) return run_batch_on_devices(o, workers, err);
    } else if (!worker && o.batch.devices != "all") {
      throw usage_error("--devices " + o.batch.devices + " needs the CUDA backend (--device cuda or auto with a GPU)");
    }
  }
  // The CUDA context (0.1-0.2 s on the H100; the driver's start, cuInit, came with the device
  // check above) made on a thread of its own while the batch starts reading and decoding; the
  // workers and nvJPEG's loader wait for it where they need it. A batch on the CPU (or
  // --io-only) makes none.
  const bool cuda = s.device == conv::backend::cuda && !o.batch.io_only;
  std::thread context;
  double context_seconds = 0;
  if (cuda)
    context = std::thread([&context_seconds] {
      const auto t0 = clock_type::now();
      try {
        pipeline::gpu_convolver::warm_up();  // with blocking sync, before anything else makes it
      } catch (const std::exception&) {
        // the workers' own warm_up reports it, naming the file
      }
      context_seconds = seconds_since(t0);
    });
  thread_joiner join_context{context};
  std::optional<convolver> c;
  if (k) {
    c.emplace(std::move(*k), s);
    if (s.decoder == jpeg_decoder::gpu && !c->gpu_jpeg()) throw error("--decoder gpu: " + gpu_jpeg_line(), exit_failure);
  }
  const char* release_env = std::getenv("GPUCONV_RELEASE_AT_END");
  options.leave_buffers_to_exit = process_ends_after_command && !(release_env && std::string(release_env) == "1");
  const bool progress = !o.quiet && ::isatty(STDERR_FILENO);
  const auto batch_start = clock_type::now();
  batch_report r = run_batch(o.input, o.output, options, c ? &*c : nullptr, o.quiet, progress, err);
  const auto batch_end = clock_type::now();
  if (context.joinable()) context.join();
  // The convolver's GPU buffers, plans and nvJPEG encoder states: left to the exit like run_batch's
  // own (batch_options::leave_buffers_to_exit), else released here.
  if (c && options.leave_buffers_to_exit) leave_to_exit(std::move(c));
  c.reset();
#ifdef GPUCONV_HAVE_NVJPEG
  if (const char* probe = std::getenv("GPUCONV_TEARDOWN_PROBE"); probe && *probe == '1' && s.device == conv::backend::cuda) {
    pipeline::nvjpeg_teardown_probe(err);
    const auto t = clock_type::now();
    (void)cudaDeviceReset();
    err << "gpuconv: teardown probe: cudaDeviceReset " << seconds_since(t) * 1e3 << " ms\n";
  }
#endif
  r.startup_seconds = seconds_to_main();
  r.setup_seconds = std::chrono::duration<double>(batch_start - main_started).count();
  r.after_seconds = seconds_since(batch_end);
  if (worker) {  // the parent prints the one summary and writes --summary
    write_worker_report(r);
  } else {
    print_summary(r, o.quiet, err);
    if (!o.batch.summary.empty()) {
      const std::string json = summary_json(r, o.batch);
      // also (above all) when interrupted: it says what was done
      write_bytes_atomic(o.batch.summary, std::vector<unsigned char>(json.begin(), json.end()), true, true);
    }
  }
  if (o.timing) {  // under --devices, each GPU's worker prints its own
    std::string title = "timing (batch";
    if (worker) {
      const char* gpu = std::getenv("CUDA_VISIBLE_DEVICES");
      title += std::string(", the worker of GPU ") + (gpu ? gpu : "?") + ", " + std::to_string(options.device_index + 1) +
               " of " + std::to_string(options.device_count);
    }
    title += ")";
    std::ostringstream setup;
    setup << std::fixed << std::setprecision(4) << "the kernel " << kernel_seconds << " s, the device check "
          << driver_seconds << " s" << (o.settings.device != conv::backend::cpu ? " (the CUDA driver's start)" : "")
          << ", the rest " << r.setup_seconds - kernel_seconds - driver_seconds << " s";
    if (cuda) setup << "; the CUDA context " << context_seconds << " s on its own thread beside the batch";
    stage_timer t(true);
    if (r.startup_seconds >= 0) t.add("start-up", r.startup_seconds, "process start to main, in steps of 10 ms");
    t.add("setup", r.setup_seconds, setup.str());
    t.add("batch", r.seconds, std::to_string(r.done) + " images: the batch's own clock, as in the summary");
    t.add("after", seconds_since(batch_end),
          std::string("the summary; buffers ") + (options.leave_buffers_to_exit ? "left to the exit" : "released"));
    t.print(err, title, std::max(0.0, r.startup_seconds) + seconds_since(main_started),
            "process start to here; the exit, where the driver tears the context down, comes on top");
  }
  return exit_code_for(r);
}

int run_command(const cli_options& o, std::ostream& out, std::ostream& err) {
  switch (o.cmd) {
    case command::print:
      out << o.text;
      if (o.version) out << gpu_jpeg_line() << "\n";
      return exit_ok;
    case command::kernels: out << named_kernels_help(); return exit_ok;
    case command::convolve: return run_convolve(o, err);
    case command::batch: return run_batch_command(o, err);
    case command::deconvolve: return run_deconvolve(o, err);
    case command::bench: return run_bench(o, out, err);
  }
  return exit_failure;
}

}  // namespace gpuconv::app
