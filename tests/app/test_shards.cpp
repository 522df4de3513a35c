// Shards and manifests (gpuconv batch --shard, --files-from, --summary): the shard spec and
// its environment variables (Slurm job arrays, Kubernetes Indexed Jobs), coverage and
// disjointness of the split for N = 1..7, stability when files are added, the JSON summary.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <map>
#include <set>

#include <opencv2/imgcodecs.hpp>

#include "batch.hpp"
#include "cli.hpp"
#include "devices.hpp"
#include "fft/device/cuda_check.hpp"
#include "errors.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> fake_env;
const char* lookup(const char* name) {
  const auto it = fake_env.find(name);
  return it == fake_env.end() ? nullptr : it->second.c_str();
}

// The relative paths plan_batch gives this shard.
std::set<std::string> planned(const fs::path& in, const fs::path& out, int index, int count) {
  batch_options o;
  o.recursive = true;
  o.shard_index = index;
  o.shard_count = count;
  batch_report r;
  std::set<std::string> files;
  for (const auto& item : plan_batch(in, out, o, r)) files.insert(item.input.lexically_relative(in).generic_string());
  CHECK(r.total == int(files.size()));
  return files;
}

}  // namespace

TEST_CASE("shards: --shard I/N, and auto from Slurm's or Kubernetes' variables", "[app]") {
  fake_env.clear();
  CHECK(resolve_shard("2/5", 0, lookup).index == 2);
  CHECK(resolve_shard("2/5", 0, lookup).count == 5);
  CHECK(resolve_shard("0/1", 0, lookup).count == 1);
  for (const char* bad : {"5/5", "a/b", "1", "-1/3", "1/0", "/3", "2/", "1/3x"})
    CHECK_THROWS_AS(resolve_shard(bad, 0, lookup), usage_error);
  CHECK_THROWS_AS(resolve_shard("auto", 0, lookup), usage_error);  // nothing set

  fake_env = {{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}};
  CHECK(resolve_shard("auto", 0, lookup).index == 3);
  CHECK(resolve_shard("auto", 0, lookup).count == 4);
  fake_env = {{"SLURM_ARRAY_TASK_ID", "5"}, {"SLURM_ARRAY_TASK_MIN", "2"}, {"SLURM_ARRAY_TASK_MAX", "5"}};
  CHECK(resolve_shard("auto", 0, lookup).index == 3);  // --array=2-5: tasks 2..5 are shards 0..3
  CHECK(resolve_shard("auto", 0, lookup).count == 4);
  fake_env = {{"SLURM_ARRAY_TASK_ID", "7"}, {"SLURM_ARRAY_TASK_COUNT", "4"}};
  CHECK_THROWS_AS(resolve_shard("auto", 0, lookup), usage_error);
  fake_env = {{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "4"}};
  CHECK_THROWS_AS(resolve_shard("auto", 0, lookup), usage_error);

  fake_env = {{"JOB_COMPLETION_INDEX", "1"}};
  CHECK(resolve_shard("auto", 3, lookup).index == 1);
  CHECK(resolve_shard("auto", 3, lookup).count == 3);
  CHECK_THROWS_AS(resolve_shard("auto", 0, lookup), usage_error);  // needs --shard-count
  CHECK_THROWS_AS(resolve_shard("auto", 1, lookup), usage_error);  // index 1 of 1
  fake_env.clear();
}

TEST_CASE("shards: N processes cover every file exactly once; added files move no other", "[app]") {
  test::scratch_dir dir;
  const auto in = dir / "in", out = dir / "out";
  const cv::Mat img = test::test_image(4, 4, CV_8UC1, 1);
  std::set<std::string> all;
  auto add = [&](const std::string& rel) {
    fs::create_directories((in / rel).parent_path());
    REQUIRE(cv::imwrite((in / rel).string(), img));
    all.insert(rel);
  };
  for (int i = 0; i < 40; ++i) add((i % 3 ? "a/" : "b/c/") + std::to_string(i) + ".png");
  for (int n = 1; n <= 7; ++n) {
    std::set<std::string> seen;
    std::size_t sum = 0;
    for (int i = 0; i < n; ++i) {
      const auto part = planned(in, out, i, n);
      sum += part.size();
      seen.insert(part.begin(), part.end());
    }
    INFO("N = " << n);
    CHECK(seen == all);          // coverage
    CHECK(sum == all.size());    // disjointness
  }
  std::map<std::string, int> before;
  for (int i = 0; i < 5; ++i)
    for (const auto& f : planned(in, out, i, 5)) before[f] = i;
  for (int i = 40; i < 50; ++i) add("a/" + std::to_string(i) + ".png");
  for (int i = 0; i < 5; ++i)
    for (const auto& f : planned(in, out, i, 5))
      if (before.count(f)) CHECK(before[f] == i);
}

TEST_CASE("batch --shard, --files-from and --summary through the CLI", "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in", out = dir / "out";
  fs::create_directories(in / "sub");
  const cv::Mat img = test::test_image(8, 8, CV_8UC3, 2);
  for (int i = 0; i < 12; ++i) REQUIRE(cv::imwrite((in / ("f" + std::to_string(i) + ".png")).string(), img));
  REQUIRE(cv::imwrite((in / "sub" / "g.png").string(), img));

  SECTION("three shards with summaries: the outputs are the inputs, the summaries add up") {
    long long processed = 0;
    for (int i = 0; i < 3; ++i) {
      const auto summary = dir / ("summary-" + std::to_string(i) + ".json");
      const auto r = test::run_gpuconv({"batch", in.string(), "box:3", out.string(), "--recursive", "--device", "cpu",
                                        "-q", "--shard", std::to_string(i) + "/3", "--summary", summary.string()},
                                       dir.path());
      REQUIRE(r.exit_code == 0);
      const std::string json = test::read_file(summary);
      CHECK_THAT(json, ContainsSubstring("\"shard\": \"" + std::to_string(i) + "/3\""));
      CHECK_THAT(json, ContainsSubstring("\"failed\": 0"));
      const auto at = json.find("\"processed\": ");
      REQUIRE(at != std::string::npos);
      processed += std::stoll(json.substr(at + 13));
    }
    CHECK(processed == 13);
    int outputs = 0;
    for (const auto& e : fs::recursive_directory_iterator(out)) outputs += e.is_regular_file();
    CHECK(outputs == 13);
  }
  SECTION("--shard auto from SLURM_ARRAY_TASK_ID, then a rerun with --skip-existing does nothing twice") {
    ::setenv("SLURM_ARRAY_TASK_ID", "1", 1);
    ::setenv("SLURM_ARRAY_TASK_COUNT", "2", 1);
    auto r = test::run_gpuconv({"batch", in.string(), "box:3", out.string(), "--device", "cpu", "-q", "--shard", "auto",
                                "--summary", (dir / "s.json").string()},
                               dir.path());
    ::unsetenv("SLURM_ARRAY_TASK_ID");
    ::unsetenv("SLURM_ARRAY_TASK_COUNT");
    REQUIRE(r.exit_code == 0);
    const std::string first = test::read_file(dir / "s.json");
    CHECK_THAT(first, ContainsSubstring("\"shard\": \"1/2\""));
    r = test::run_gpuconv({"batch", in.string(), "box:3", out.string(), "--device", "cpu", "-q", "--shard", "1/2",
                           "--skip-existing", "--summary", (dir / "s.json").string()},
                          dir.path());
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(test::read_file(dir / "s.json"), ContainsSubstring("\"processed\": 0"));
  }
  SECTION("--files-from: listed files only, a path outside IN_DIR is a reported failure") {
    test::write_file(dir / "list.txt", "f1.png\nsub/g.png\n\n" + (dir / "elsewhere.png").string() + "\n");
    const auto r = test::run_gpuconv({"batch", in.string(), "box:3", out.string(), "--device", "cpu", "-q",
                                      "--files-from", (dir / "list.txt").string(), "--summary",
                                      (dir / "s.json").string()},
                                     dir.path());
    CHECK(r.exit_code == exit_failure);
    CHECK_THAT(r.err, ContainsSubstring("not under IN_DIR"));
    CHECK(fs::exists(out / "f1.png"));
    CHECK(fs::exists(out / "sub" / "g.png"));
    CHECK_FALSE(fs::exists(out / "f2.png"));
    const std::string json = test::read_file(dir / "s.json");
    CHECK_THAT(json, ContainsSubstring("\"processed\": 2"));
    CHECK_THAT(json, ContainsSubstring("\"failed\": 1"));
  }
  SECTION("bad --shard values are usage errors") {
    const auto r = test::run_gpuconv({"batch", in.string(), "box:3", out.string(), "--shard", "3/3"}, dir.path());
    CHECK(r.exit_code == exit_usage);
    CHECK_THAT(r.err, ContainsSubstring("--shard 3/3"));
  }
}

// --devices (devices.hpp): workers split each shard; the workers' reports; the CLI end to end.
TEST_CASE("devices: the workers' shares split every shard evenly and exactly once", "[app]") {
  for (int shards = 1; shards <= 4; ++shards)
    for (int devices = 1; devices <= 4; ++devices) {
      INFO(shards << " shards, " << devices << " devices");
      std::map<std::pair<int, int>, int> count;  // (shard, device) -> files
      bool once = true;
      const int files = 4000;
      for (int f = 0; f < files; ++f) {
        const std::string rel = "dir" + std::to_string(f % 7) + "/img_" + std::to_string(f) + ".png";
        int takers = 0;
        for (int s = 0; s < shards; ++s)
          for (int d = 0; d < devices; ++d) {
            app::batch_options o;
            o.shard_index = s;
            o.shard_count = shards;
            o.device_index = d;
            o.device_count = devices;
            if (app::takes_file(rel, o)) {
              ++takers;
              ++count[{s, d}];
            }
          }
        once = once && takers == 1;
      }
      CHECK(once);
      // each (shard, device) share near files / (shards x devices): the two splits are independent
      const double expected = double(files) / (shards * devices);
      for (const auto& [key, n] : count) CHECK(std::abs(n - expected) < 0.2 * expected);
      CHECK(int(count.size()) == shards * devices);
    }
}

TEST_CASE("devices: --devices picks the workers' GPUs, bad values are usage errors", "[app]") {
  CHECK(app::device_workers("all", 0, nullptr).empty());
  CHECK(app::device_workers("all", 1, nullptr).empty());
  CHECK(app::device_workers("all", 2, nullptr) == std::vector<std::string>{"0", "1"});
  CHECK(app::device_workers("all", 2, "3,5") == std::vector<std::string>{"3", "5"});
  CHECK(app::device_workers("1,1", 2, "3,5") == std::vector<std::string>{"5", "5"});  // two workers on one GPU
  CHECK(app::device_workers("0", 1, nullptr) == std::vector<std::string>{"0"});
  CHECK_THROWS_AS(app::device_workers("2", 2, nullptr), app::usage_error);
  CHECK_THROWS_AS(app::device_workers("0,x", 2, nullptr), app::usage_error);
  CHECK_THROWS_AS(app::device_workers("", 2, nullptr), app::usage_error);
  try {
    app::device_workers("0,7", 2, nullptr);
  } catch (const app::usage_error& e) {
    CHECK_THAT(e.what(), ContainsSubstring("GPU 7"));
  }
}

TEST_CASE("devices: a worker's report reaches the parent whole, any bytes in names", "[app]") {
  test::scratch_dir dir;
  const auto file = dir / "report";
  ::setenv("GPUCONV_DEVICE_REPORT", file.string().c_str(), 1);
  app::batch_report r;
  r.total = 9;
  r.done = 5;
  r.skipped = 1;
  r.failed = 2;
  r.not_processed = 1;
  r.clipped_files = 1;
  r.clipped_pixels = 1234567890123LL;
  r.bytes_in = 99;
  r.bytes_out = 77;
  r.interrupted = true;
  r.seconds = 1.5;
  r.failures = {{"a b\n7 8\nend", "input 'a b': x\ny"}, {"", ""}};
  app::write_worker_report(r);
  ::unsetenv("GPUCONV_DEVICE_REPORT");
  app::batch_report back;
  REQUIRE(app::read_worker_report(file.string(), back));
  CHECK(back.total == 9);
  CHECK(back.done == 5);
  CHECK(back.skipped == 1);
  CHECK(back.failed == 2);
  CHECK(back.not_processed == 1);
  CHECK(back.clipped_pixels == 1234567890123LL);
  CHECK(back.bytes_out == 77);
  CHECK(back.interrupted);
  CHECK(back.seconds == 1.5);
  REQUIRE(back.failures.size() == 2);
  CHECK(back.failures[0].file == r.failures[0].file);
  CHECK(back.failures[0].reason == r.failures[0].reason);
  // a report cut short is refused
  const std::string text = test::read_file(file);
  test::write_file(file, text.substr(0, text.size() - 6));
  app::batch_report cut;
  CHECK_FALSE(app::read_worker_report(file.string(), cut));
  CHECK_FALSE(app::read_worker_report((dir / "missing").string(), cut));
}

TEST_CASE("batch --devices needs the CUDA backend", "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in", out = dir / "out";
  fs::create_directories(in / "sub");
  for (int i = 0; i < 12; ++i)
    REQUIRE(cv::imwrite((in / ("f" + std::to_string(i) + ".png")).string(), test::test_image(40, 50, CV_8UC3, i + 1)));
  REQUIRE(cv::imwrite((in / "sub" / "g.png").string(), test::test_image(30, 20, CV_8UC3, 99)));

  SECTION("--devices needs the CUDA backend") {
    const auto r = test::run_gpuconv({"batch", in.string(), "box:3", out.string(), "--device", "cpu", "--devices", "0"},
                                     dir.path());
    CHECK(r.exit_code == exit_usage);
    CHECK_THAT(r.err, ContainsSubstring("--devices 0 needs the CUDA backend"));
  }
}

TEST_CASE("batch --devices: two workers on one GPU give one process's outputs, per-GPU counts", "[app][cli][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  test::scratch_dir dir;
  const auto in = dir / "in", out = dir / "out", single = dir / "single";
  fs::create_directories(in / "sub");
  for (int i = 0; i < 12; ++i)
    REQUIRE(cv::imwrite((in / ("f" + std::to_string(i) + ".png")).string(), test::test_image(40, 50, CV_8UC3, i + 1)));
  REQUIRE(cv::imwrite((in / "sub" / "g.png").string(), test::test_image(30, 20, CV_8UC3, 99)));
  {
    auto r = test::run_gpuconv({"batch", in.string(), "gaussian:2", single.string(), "--recursive", "--device", "cuda", "-q"},
                               dir.path());
    REQUIRE(r.exit_code == 0);
    r = test::run_gpuconv({"batch", in.string(), "gaussian:2", out.string(), "--recursive", "--device", "cuda",
                           "--devices", "0,0", "--summary", (dir / "s.json").string()},
                          dir.path());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.err, ContainsSubstring("GPU 0: done"));
    const std::string json = test::read_file(dir / "s.json");
    CHECK_THAT(json, ContainsSubstring("\"processed\": 13"));
    CHECK_THAT(json, ContainsSubstring("\"devices\": ["));
    int workers = 0;
    long long processed = 0;
    const std::string entry = "{\"gpu\": \"0\", \"processed\": ";
    for (auto at = json.find(entry); at != std::string::npos; at = json.find(entry, at + 1)) {
      ++workers;
      processed += std::stoll(json.substr(at + entry.size()));
    }
    CHECK(workers == 2);
    CHECK(processed == 13);
    for (const auto& e : fs::recursive_directory_iterator(single))
      if (e.is_regular_file()) {
        const auto other = out / e.path().lexically_relative(single);
        INFO(other);
        REQUIRE(fs::exists(other));
        CHECK(test::read_file(other) == test::read_file(e.path()));
      }
    CHECK(test::temp_files_under(out).empty());
  }
}
