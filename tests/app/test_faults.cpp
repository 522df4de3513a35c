// Faults around the output (issue 6), through the built gpuconv binary: a read-only output
// directory, a full disk (a 64 KiB tmpfs in a private mount namespace, `unshare -rm`), a
// file-size limit (RLIMIT_FSIZE, no privileges needed), SIGINT and SIGTERM in the middle of
// a batch followed by a rerun with --skip-existing, and --device cuda without a GPU.
// Nothing may be lost: no partial output, no temp file, a one-line error with the errno, the
// documented exit code, a summary for batches.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include <opencv2/imgcodecs.hpp>

#include "atomic_write.hpp"
#include "errors.hpp"
#include "fft/device/cuda_check.hpp"
#include "image_io.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string gpuconv_command(const std::vector<std::string>& args) {
  std::string cmd = shell_quote(test::gpuconv_cli());
  for (const auto& a : args) cmd += " " + shell_quote(a);
  return cmd;
}

// Runs `script` with /bin/sh, stdout and stderr captured; optionally under a file-size limit.
test::run_result run_shell(const std::string& script, const fs::path& dir, rlim_t fsize_limit = RLIM_INFINITY) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open((dir / ".stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open((dir / ".stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (fsize_limit != RLIM_INFINITY) {
      const rlimit limit{fsize_limit, fsize_limit};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return test::wait_gpuconv(pid, dir);
}

// Whether `unshare -rm` (a user and mount namespace, no privileges needed where the kernel
// allows unprivileged user namespaces) can mount a tmpfs here.
bool can_unshare_mount(const fs::path& dir) {
  fs::create_directories(dir / "probe");
  const auto r = run_shell("unshare -rm sh -c " + shell_quote("mount -t tmpfs -o size=64k tmpfs " +
                                                              shell_quote((dir / "probe").string())),
                           dir);
  return r.exit_code == 0;
}

void make_images(const fs::path& dir, int n, int side) {
  fs::create_directories(dir);
  for (int i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "i%03d.png", i);
    REQUIRE(cv::imwrite((dir / name).string(), test::test_image(side, side, CV_8UC3, std::uint64_t(i))));
  }
}

// Every file under `dir` (no temp file, each a whole image of `side` columns).
void check_outputs_whole(const fs::path& dir, int side) {
  CHECK(test::temp_files_under(dir).empty());
  if (!fs::exists(dir)) return;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) {
      INFO(e.path());
      CHECK(read_image(e.path()).cols == side);
    }
}

}  // namespace

namespace {

// An input image and an empty directory `ro` for the read-only output cases.
struct read_only_case {
  test::scratch_dir dir;
  fs::path in = dir / "in.png", ro = dir / "ro";
  std::vector<std::string> args, batch;
  read_only_case() {
    REQUIRE(cv::imwrite(in.string(), test::test_image(32, 32, CV_8UC3)));
    fs::create_directories(ro);
    args = {in.string(), "box:3", (ro / "out.png").string(), "--device", "cpu"};
    batch = {"batch", dir.path().string(), "box:3", ro.string(), "--device", "cpu"};
  }
};

}  // namespace

// Two test cases, so that CTest reports each as run or skipped on its own.
TEST_CASE("faults: a read-only output directory (chmod 555) is exit 4, nothing written", "[app][cli][faults]") {
  if (::geteuid() == 0) SKIP("running as root: a chmod 555 directory is writable for root (the bind-mount test binds)");
  read_only_case c;
  auto& [dir, in, ro, args, batch] = c;
  {
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    const auto r = test::run_gpuconv(args, dir.path());
    CHECK(r.exit_code == exit_output);
    CHECK_THAT(r.err, ContainsSubstring("ro/out.png") && ContainsSubstring("not writable"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    fs::permissions(ro, fs::perms::owner_all);
    CHECK(fs::is_empty(ro));
  }
}

TEST_CASE("faults: a read-only output directory (read-only bind mount, binds root too) is exit 4, nothing written",
          "[app][cli][faults]") {
  read_only_case c;
  auto& [dir, in, ro, args, batch] = c;
  if (!can_unshare_mount(dir.path())) SKIP("unshare -rm cannot mount here (no user namespaces)");
  {
    const std::string mount = "mount --bind " + shell_quote(ro.string()) + " " + shell_quote(ro.string()) +
                              " && mount -o remount,bind,ro " + shell_quote(ro.string());
    auto r = run_shell("unshare -rm sh -c " + shell_quote(mount + " && exec " + gpuconv_command(args)), dir.path());
    INFO(r.err);
    CHECK(r.exit_code == exit_output);
    CHECK_THAT(r.err, ContainsSubstring("ro/out.png") && ContainsSubstring("Read-only file system"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    r = run_shell("unshare -rm sh -c " + shell_quote(mount + " && exec " + gpuconv_command(batch)), dir.path());
    CHECK(r.exit_code == exit_failure);
    CHECK_THAT(r.err, ContainsSubstring("done 0, skipped 0, failed 1") && ContainsSubstring("Read-only file system"));
    CHECK(fs::is_empty(ro));
  }
}

TEST_CASE("faults: a full disk (64 KiB tmpfs) fails each output with ENOSPC and leaves no partial file",
          "[app][cli][faults]") {
  test::scratch_dir dir;
  if (!can_unshare_mount(dir.path())) SKIP("unshare -rm cannot mount a tmpfs here (no user namespaces)");
  const auto in = dir / "in";
  make_images(in, 6, 96);  // ~28 KB each as PNG: two fit in 64 KiB, the rest cannot
  const auto full = dir / "full";
  fs::create_directories(full);
  const std::string mount = "mount -t tmpfs -o size=64k tmpfs " + shell_quote(full.string());
  // inside the namespace: run gpuconv, then list what it left on the tmpfs (gone afterwards)
  const std::string list = "echo rc=$?; ls -A " + shell_quote((full / "out").string()) + " | sed 's/^/file: /'";
  const auto r = run_shell(
      "unshare -rm sh -c " + shell_quote(mount + "; " +
                                         gpuconv_command({"batch", in.string(), "box:3", (full / "out").string(),
                                                          "--device", "cpu", "--jobs", "1"}) +
                                         "; " + list),
      dir.path());
  INFO(r.err << r.out);
  CHECK_THAT(r.out, ContainsSubstring("rc=1"));
  CHECK_THAT(r.err, ContainsSubstring("No space left on device"));
  CHECK_THAT(r.err, ContainsSubstring(", failed ") && ContainsSubstring("failed files:"));
  CHECK(r.out.find(".gpuconv-tmp-") == std::string::npos);  // no temp file left on the full disk
  CHECK(r.out.find("file: i000.png") != std::string::npos);  // the first output fitted
}

TEST_CASE("faults: a file-size limit (RLIMIT_FSIZE) is an EFBIG error, not a kill with a temp file left",
          "[app][cli][faults]") {
  test::scratch_dir dir;
  const auto in = dir / "in";
  make_images(in, 3, 96);
  const auto out = dir / "out";
  fs::create_directories(out);
  auto r = run_shell(gpuconv_command({(in / "i000.png").string(), "box:3", (out / "one.png").string(), "--device",
                                      "cpu"}),
                     dir.path(), 4096);
  INFO(r.err);
  CHECK(r.exit_code == exit_output);
  CHECK_THAT(r.err, ContainsSubstring("one.png") && ContainsSubstring("File too large"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(fs::is_empty(out));
  r = run_shell(gpuconv_command({"batch", in.string(), "box:3", out.string(), "--device", "cpu"}), dir.path(), 4096);
  CHECK(r.exit_code == exit_failure);
  CHECK_THAT(r.err, ContainsSubstring("done 0, skipped 0, failed 3") && ContainsSubstring("File too large"));
  CHECK(fs::is_empty(out));
}

TEST_CASE("faults: SIGINT / SIGTERM mid-batch: summary, 130 / 143, no partial file; --skip-existing resumes",
          "[app][cli][faults]") {
  const int signal = GENERATE(SIGINT, SIGTERM);
  INFO((signal == SIGINT ? "SIGINT" : "SIGTERM"));
  test::scratch_dir dir;
  const auto in = dir / "in", out = dir / "out";
  constexpr int images = 40, side = 160;
  make_images(in, images, side);
  const auto summary = dir / "summary.json";
  const std::vector<std::string> args{"batch",  in.string(), "gaussian:8", out.string(), "--device",
                                      "cpu",    "--jobs",    "1",          "--summary",  summary.string()};
  const pid_t pid = test::spawn_gpuconv(args, dir.path());
  REQUIRE(pid > 0);
  // signal once the first output exists (not a temp file): the run is under way
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto started = [&] {
    std::error_code ec;
    for (auto it = fs::directory_iterator(out, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (!is_temp_name(it->path())) return true;
    return false;
  };
  while (!started() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ::kill(pid, signal);
  const auto r = test::wait_gpuconv(pid, dir.path());
  INFO(r.err);
  if (r.exit_code == 0) SKIP("the batch finished before the signal arrived");
  CHECK(r.exit_code == 128 + signal);
  CHECK_THAT(r.err, ContainsSubstring("batch interrupted: done ") && ContainsSubstring("not processed"));
  // the JSON summary is written despite the interrupt, and says so
  REQUIRE(fs::exists(summary));
  CHECK_THAT(test::read_file(summary), ContainsSubstring("\"interrupted\": true"));
  check_outputs_whole(out, side);
  std::size_t written = 0;
  for (const auto& e : fs::directory_iterator(out)) written += e.is_regular_file();
  CHECK(written >= 1);
  CHECK(written < std::size_t(images));

  // the rerun does the rest and skips what is there
  auto resume = args;
  resume.push_back("--skip-existing");
  const auto again = test::run_gpuconv(resume, dir.path());
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK_THAT(test::read_file(summary), ContainsSubstring("\"interrupted\": false"));
  CHECK_THAT(again.err, ContainsSubstring("done " + std::to_string(images - written) + ", skipped " +
                                          std::to_string(written) + ", failed 0"));
  check_outputs_whole(out, side);
  std::size_t total = 0;
  for (const auto& e : fs::directory_iterator(out)) total += e.is_regular_file();
  CHECK(total == std::size_t(images));
}

TEST_CASE("faults: --device cuda without a GPU is one line, exit 1, nothing written (single and batch)",
          "[app][cli][faults]") {
  if (cuda_device_available()) SKIP("a CUDA device is present");
  test::scratch_dir dir;
  const auto in = dir / "in";
  make_images(in, 2, 16);
  const auto out = dir / "out";
  auto r = test::run_gpuconv({(in / "i000.png").string(), "box:3", (dir / "o.png").string(), "--device", "cuda"},
                             dir.path());
  CHECK(r.exit_code == exit_failure);
  CHECK(r.err == "gpuconv: error: --device cuda: no CUDA device is available\n");
  CHECK_FALSE(fs::exists(dir / "o.png"));
  r = test::run_gpuconv({"batch", in.string(), "box:3", out.string(), "--device", "cuda"}, dir.path());
  CHECK(r.exit_code == exit_failure);
  CHECK(r.err == "gpuconv: error: --device cuda: no CUDA device is available\n");
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("faults: outputs with shared directory syncs are whole under their names, their directories synced",
          "[app][faults]") {
  test::scratch_dir dir;
  const fs::path a = dir / "a", b = dir / "b", gone = dir / "gone";
  fs::create_directories(a);
  fs::create_directories(b);
  fs::create_directories(gone);
  directory_syncs syncs(std::chrono::hours(1), 3);  // by count only here
  auto bytes = [](int i) { return std::vector<unsigned char>(1000 + i, static_cast<unsigned char>(i)); };
  write_bytes_atomic(a / "0.bin", bytes(0), true, false, &syncs);
  write_bytes_atomic(b / "1.bin", bytes(1), true, false, &syncs);
  CHECK(syncs.synced() == 0);  // two renames noted, none synced yet
  write_bytes_atomic(a / "2.bin", bytes(2), true, false, &syncs);
  CHECK(syncs.synced() == 2);  // the third: a and b, once each
  write_bytes_atomic(b / "3.bin", bytes(3), true, false, &syncs);
  // an output that may not replace a file: refused, nothing noted, no temp file
  CHECK_THROWS_AS(write_bytes_atomic(b / "3.bin", bytes(9), false, false, &syncs), output_error);
  // a directory gone before its sync: the sync is best effort, as the one-image command's
  write_bytes_atomic(gone / "4.bin", bytes(4), true, false, &syncs);
  fs::remove_all(gone);
  syncs.sync();
  CHECK(syncs.synced() == 4);  // b and gone
  syncs.sync();
  CHECK(syncs.synced() == 4);  // nothing pending
  for (int i = 0; i < 4; ++i) {
    const fs::path p = (i % 2 ? b : a) / (std::to_string(i) + ".bin");
    const std::string text = test::read_file(p);
    CHECK(std::vector<unsigned char>(text.begin(), text.end()) == bytes(i));
  }
  CHECK(test::temp_files_under(dir.path()).empty());
}
