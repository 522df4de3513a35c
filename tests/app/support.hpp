// Helpers for the [app] tests: a scratch directory removed at the end, small synthetic
// images, and running the built gpuconv binary with its output captured.
#pragma once
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "kernel.hpp"

extern char** environ;

namespace gpuconv::test {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed (with its contents) on destruction.
class scratch_dir {
 public:
  scratch_dir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("gpuconv-app-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~scratch_dir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add | fs::perm_options::nofollow, ec);
    fs::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// An image with structure in every channel (ramps, a disc, deterministic noise) of `type`.
inline cv::Mat test_image(int rows, int cols, int type, std::uint64_t seed = 1) {
  cv::Mat img(rows, cols, type);
  cv::RNG rng(seed);
  const int depth = CV_MAT_DEPTH(type), channels = CV_MAT_CN(type);
  const double top = depth == CV_8U ? 255 : depth == CV_16U ? 65535 : 1.0;
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x)
      for (int c = 0; c < channels; ++c) {
        const double ramp = (c % 2 ? double(x) / cols : double(y) / rows);
        const bool disc = (x - cols / 2) * (x - cols / 2) + (y - rows / 2) * (y - rows / 2) < rows * cols / 16;
        double v = top * (0.6 * ramp + 0.3 * disc) + rng.uniform(0.0, 0.1 * top);
        if (depth == CV_8U)
          img.ptr<uchar>(y)[x * channels + c] = cv::saturate_cast<uchar>(v);
        else if (depth == CV_16U)
          img.ptr<ushort>(y)[x * channels + c] = cv::saturate_cast<ushort>(v);
        else
          img.ptr<float>(y)[x * channels + c] = float(v);
      }
  return img;
}

// A kh x kw kernel of values in [-0.3, 1) scaled to sum to `sum` (deterministic per seed).
inline app::kernel make_kernel(int kh, int kw, std::uint64_t seed, double sum = 1.0) {
  app::kernel k;
  k.height = kh;
  k.width = kw;
  cv::RNG rng(seed);
  double s = 0;
  for (int i = 0; i < kh * kw; ++i) {
    k.values.push_back(float(rng.uniform(-0.3, 1.0)));
    s += k.values.back();
  }
  for (float& v : k.values) v = float(v * sum / s);
  return k;
}

struct run_result {
  int exit_code = -1;
  std::string out, err;
};

// The gpuconv binary the [cli] tests run: $GPUCONV_CLI_PATH when set (a test binary built on
// one machine and run on another, e.g. the GPU machine), else the one built with the tests.
inline const char* gpuconv_cli() {
  const char* env = std::getenv("GPUCONV_CLI_PATH");
  return env && *env ? env : GPUCONV_CLI;
}

// Starts the gpuconv binary (gpuconv_cli()) with `args`, stdout and stderr going to files in
// `dir`; wait_gpuconv collects them.
inline pid_t spawn_gpuconv(const std::vector<std::string>& args, const fs::path& dir) {
  const fs::path out_file = dir / ".stdout", err_file = dir / ".stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> storage{gpuconv_cli()};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, gpuconv_cli(), &actions, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

inline run_result wait_gpuconv(pid_t pid, const fs::path& dir) {
  run_result r;
  if (pid > 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  r.out = read_file(dir / ".stdout");
  r.err = read_file(dir / ".stderr");
  fs::remove(dir / ".stdout");
  fs::remove(dir / ".stderr");
  return r;
}

inline run_result run_gpuconv(const std::vector<std::string>& args, const fs::path& dir) {
  return wait_gpuconv(spawn_gpuconv(args, dir), dir);
}

// Files under `dir` whose names mark them as the atomic writer's temp files.
inline std::vector<fs::path> temp_files_under(const fs::path& dir) {
  std::vector<fs::path> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".gpuconv-tmp-") != std::string::npos) found.push_back(e.path());
  return found;
}

}  // namespace gpuconv::test
