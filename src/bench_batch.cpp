// `gpuconv bench`: batch throughput against its I/O ceiling. Generates N square RGB PNGs
// (gradients, discs and noise: photo-like compressibility, deterministic), then runs the
// same batch pipeline twice with the same --jobs: --io-only (decode + encode, the ceiling)
// and with the convolution. Part of the gpuconv binary so that it runs wherever the
// (portable) binary runs, without OpenCV or Python installed.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <optional>
#include <thread>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "batch.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "interrupt.hpp"

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

cv::Mat synthetic_rgb(int size, int seed) {
  cv::Mat img(size, size, CV_8UC3);
  for (int y = 0; y < size; ++y) {
    auto* row = img.ptr<cv::Vec3b>(y);
    for (int x = 0; x < size; ++x)
      row[x] = cv::Vec3b(cv::saturate_cast<uchar>(255.0 * x / size), cv::saturate_cast<uchar>(255.0 * y / size),
                         cv::saturate_cast<uchar>(128 + 100 * std::sin((x + y + seed * 37) * 0.01)));
  }
  cv::RNG rng(std::uint64_t(seed) * 7919 + 1);
  for (int i = 0; i < 12; ++i)
    cv::circle(img, {rng.uniform(0, size), rng.uniform(0, size)}, rng.uniform(size / 32, size / 6),
               cv::Scalar(rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(0, 256)), cv::FILLED, cv::LINE_AA);
  cv::Mat noise(size, size, CV_8UC3);
  rng.fill(noise, cv::RNG::NORMAL, 0, 6);
  cv::add(img, noise, img, cv::noArray(), CV_8UC3);
  return img;
}

struct run_result {
  std::string name;
  batch_report report;
};

}  // namespace

int run_bench(const cli_options& o, std::ostream& out, std::ostream& err) {
  const int jobs = o.batch.jobs > 0 ? o.batch.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  const bool own_dir = o.bench.dir.empty();
  const fs::path root = own_dir ? fs::temp_directory_path() / ("gpuconv-bench-" + std::to_string(::getpid()))
                                : fs::path(o.bench.dir);
  const fs::path in_dir = root / "in";
  std::error_code ec;
  fs::create_directories(in_dir, ec);
  if (ec) throw output_error("bench directory '" + in_dir.string() + "': " + ec.message());

  // inputs, generated in parallel (reused when --dir already holds them)
  std::atomic<int> next{0};
  std::vector<std::thread> gen;
  std::atomic<bool> gen_failed{false};
  for (int j = 0; j < jobs; ++j)
    gen.emplace_back([&] {
      for (int i; (i = next++) < o.bench.images && !interrupted();) {
        char name[32];
        std::snprintf(name, sizeof name, "img%05d.png", i);
        const fs::path p = in_dir / name;
        std::error_code e;
        if (fs::exists(p, e)) continue;
        if (!cv::imwrite(p.string(), synthetic_rgb(o.bench.size, i))) gen_failed = true;
      }
    });
  for (auto& t : gen) t.join();
  if (gen_failed) throw output_error("bench: cannot write the generated images into '" + in_dir.string() + "'");
  if (interrupted()) return interrupt_exit_code();

  convolve_settings s = o.settings;
  s.device = resolve_device(s.device, o.quiet, err);
  convolver c(load_kernel(o), s);

  batch_options b;
  b.jobs = jobs;
  b.existing = existing_policy::overwrite;
  b.extensions = {".png"};
  std::vector<run_result> runs;
  for (const bool io_only : {true, false}) {
    b.io_only = io_only;
    const fs::path out_dir = root / (io_only ? "out-io-only" : "out-batch");
    fs::remove_all(out_dir, ec);
    batch_report r = run_batch(in_dir, out_dir, b, io_only ? nullptr : &c, true, false, err);
    if (r.failed || r.interrupted) {
      print_summary(r, false, err);
      if (r.interrupted) return interrupt_exit_code();
      throw error("bench: the " + std::string(io_only ? "--io-only" : "batch") + " run failed", exit_failure);
    }
    runs.push_back({io_only ? "decode+encode (--io-only)" : "batch (convolution)", r});
  }

  const char* device = s.device == conv::backend::cuda ? "cuda" : "cpu";
  out << "gpuconv bench: " << o.bench.images << " RGB PNGs of " << o.bench.size << "x" << o.bench.size
      << ", kernel " << o.kernel << ", device " << device << ", jobs " << jobs << "\n";
  out << std::left << std::setw(28) << "run" << std::right << std::setw(8) << "images" << std::setw(10) << "seconds"
      << std::setw(11) << "images/s" << std::setw(14) << "% of ceiling" << "\n";
  const double ceiling = runs[0].report.done / runs[0].report.seconds;
  for (const auto& r : runs) {
    const double rate = r.report.done / r.report.seconds;
    out << std::left << std::setw(28) << r.name << std::right << std::setw(8) << r.report.done << std::setw(10)
        << std::fixed << std::setprecision(2) << r.report.seconds << std::setw(11) << rate << std::setw(13)
        << std::setprecision(1) << 100 * rate / ceiling << "%\n";
  }
  out << "csv,images,size,jobs,device,io_only_images_per_s,batch_images_per_s,ratio\n"
      << "csv," << o.bench.images << "," << o.bench.size << "," << jobs << "," << device << ","
      << std::setprecision(3) << ceiling << "," << runs[1].report.done / runs[1].report.seconds << ","
      << (runs[1].report.done / runs[1].report.seconds) / ceiling << "\n";
  if (own_dir && !o.bench.keep) fs::remove_all(root, ec);
  return exit_ok;
}

}  // namespace gpuconv::app
