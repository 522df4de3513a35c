// The command line: parse_cli into cli_options, then the built gpuconv binary end to end
// (exit codes, messages, outputs compared with the in-process convolution, inputs never
// overwritten, batch summaries, no temp files left, interrupts).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <csignal>
#include <thread>

#include <opencv2/imgcodecs.hpp>

#include "atomic_write.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "convolve_image.hpp"
#include "errors.hpp"
#include "fft/device/cuda_check.hpp"
#include "named_kernels.hpp"
#include "image_io.hpp"
#include "kernel_io.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

cli_options parse(std::vector<std::string> args) { return parse_cli(args); }

// The reference for an end-to-end run: the same image, kernel and settings in process.
cv::Mat in_process(const fs::path& input, const std::string& kernel_arg, convolve_settings s) {
  s.device = conv::backend::cpu;
  convolver c(resolve_kernel(kernel_arg), s);
  return convolve_image(read_image(input), c).image;
}

}  // namespace

TEST_CASE("parse_cli: defaults and every option", "[app]") {
  const cli_options d = parse({"in.png", "k.txt", "out.png"});
  CHECK(d.cmd == command::convolve);
  CHECK(d.input == "in.png");
  CHECK(d.kernel == "k.txt");
  CHECK(d.output == "out.png");
  CHECK(d.settings.semantics.op == conv::operation::convolution);
  CHECK(d.settings.semantics.mode == conv::output_mode::same);
  CHECK(d.settings.semantics.border == conv::boundary::reflect101);
  CHECK(d.settings.depth == output_depth::same);
  CHECK(d.settings.alpha == alpha_mode::premultiply);
  CHECK(d.settings.device == conv::backend::automatic);
  CHECK(d.settings.scale == 1);
  CHECK(d.settings.offset == 0);
  CHECK_FALSE(d.normalize);
  CHECK_FALSE(d.quiet);

  const cli_options o = parse({"--mode", "full", "--correlate", "--boundary", "constant:12.5", "--normalize",
                               "--scale", "2", "--offset=-3", "--depth", "32f", "--alpha", "keep", "--device", "cpu",
                               "-q", "a.tif", "gaussian:2", "b.tif"});
  CHECK(o.settings.semantics.op == conv::operation::correlation);
  CHECK(o.settings.semantics.mode == conv::output_mode::full);
  CHECK(o.settings.semantics.border == conv::boundary::constant);
  CHECK(o.settings.semantics.constant_value == 12.5f);
  CHECK(o.normalize);
  CHECK(o.settings.scale == 2);
  CHECK(o.settings.offset == -3);
  CHECK(o.settings.depth == output_depth::f32);
  CHECK(o.settings.alpha == alpha_mode::keep);
  CHECK(o.settings.device == conv::backend::cpu);
  CHECK(o.quiet);
  CHECK(o.kernel == "gaussian:2");

  for (const auto& [name, b] : std::vector<std::pair<std::string, conv::boundary>>{
           {"zero", conv::boundary::zero}, {"replicate", conv::boundary::replicate},
           {"reflect", conv::boundary::reflect}, {"reflect101", conv::boundary::reflect101},
           {"wrap", conv::boundary::wrap}})
    CHECK(parse({"a.png", "k", "b.png", "--boundary", name}).settings.semantics.border == b);
  CHECK(parse({"a.png", "k", "b.png", "--depth", "8"}).settings.depth == output_depth::u8);
  CHECK(parse({"a.png", "k", "b.png", "--depth", "16"}).settings.depth == output_depth::u16);
  CHECK(parse({"a.png", "k", "b.png", "--alpha", "separate"}).settings.alpha == alpha_mode::separate);
  CHECK(parse({"a.png", "k", "b.png", "--device", "cuda"}).settings.device == conv::backend::cuda);
}

TEST_CASE("parse_cli: bad options and values are usage errors", "[app]") {
  const std::vector<std::vector<std::string>> bad{
      {},
      {"a.png", "k"},
      {"a.png", "k", "b.png", "extra"},
      {"a.png", "k", "b.png", "--bogus"},
      {"a.png", "k", "b.png", "--mode", "middle"},
      {"a.png", "k", "b.png", "--boundary", "mirror"},
      {"a.png", "k", "b.png", "--boundary", "constant"},
      {"a.png", "k", "b.png", "--boundary", "constant:x"},
      {"a.png", "k", "b.png", "--boundary", "constant:nan"},
      {"a.png", "k", "b.png", "--depth", "12"},
      {"a.png", "k", "b.png", "--alpha", "drop"},
      {"a.png", "k", "b.png", "--device", "tpu"},
      {"a.png", "k", "b.png", "--scale", "abc"},
      {"a.png", "k", "b.png", "--scale", "inf"},
      {"kernels", "extra"},
      {"batch", "in"},
      {"batch", "in", "k", "out", "--jobs", "0"},
      {"batch", "in", "k", "out", "--skip-existing", "--overwrite"},
      {"batch", "in", "k", "out", "--ext", "png,,jpg"},
      {"batch", "in", "k", "out", "--format", "png,jpg"},
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    INFO("gpuconv " << joined);
    CHECK_THROWS_AS(parse(args), usage_error);
  }
}

TEST_CASE("parse_cli: help, version, kernels, batch, bench", "[app]") {
  const cli_options h = parse({"--help"});
  CHECK(h.cmd == command::print);
  CHECK_THAT(h.text, ContainsSubstring("--boundary") && ContainsSubstring("Examples") &&
                         ContainsSubstring("gpuconv batch"));
  const cli_options v = parse({"--version"});
  CHECK(v.cmd == command::print);
  CHECK(v.text == version_string() + "\n");
  CHECK(version_string().find('.') != std::string::npos);
  CHECK(parse({"kernels"}).cmd == command::kernels);
  CHECK(parse({"batch", "--help"}).cmd == command::print);

  const cli_options b = parse({"batch", "in", "box:3", "out", "--recursive", "--ext", "PNG, .Tif", "--format", ".JPG",
                               "--skip-existing", "--jobs", "3", "--stop-on-error", "--correlate"});
  CHECK(b.cmd == command::batch);
  CHECK(b.batch.recursive);
  CHECK(b.batch.extensions == std::vector<std::string>{".png", ".tif"});
  CHECK(b.batch.format == ".jpg");
  CHECK(b.batch.existing == existing_policy::skip);
  CHECK(b.batch.jobs == 3);
  CHECK(b.batch.stop_on_error);
  CHECK(b.settings.semantics.op == conv::operation::correlation);
  CHECK(parse({"batch", "in", "k", "out", "--overwrite"}).batch.existing == existing_policy::overwrite);
  CHECK(parse({"batch", "in", "k", "out"}).batch.existing == existing_policy::fail);
  CHECK(parse({"batch", "in", "k", "out", "--io-only"}).batch.io_only);

  const cli_options bench = parse({"bench", "--images", "4", "--size", "64", "--jobs", "2", "--device", "cpu"});
  CHECK(bench.cmd == command::bench);
  CHECK(bench.bench.images == 4);
  CHECK(bench.bench.size == 64);
  CHECK(bench.kernel == "gaussian:3");
  CHECK(bench.bench.rounds == 3);
  CHECK(parse({"bench", "--rounds", "1"}).bench.rounds == 1);
  CHECK_THROWS_AS(parse({"bench", "--rounds", "0"}), usage_error);
}

// The bench's rounds: each run's median in the table, every round's rates below it, the
// convolving batch a process of its own each round (its report read back: the counts in the
// table are its files).
TEST_CASE("CLI: gpuconv bench runs its rounds and reports the medians", "[app][cli]") {
  test::scratch_dir dir;
  const auto r = test::run_gpuconv({"bench", "--images", "3", "--size", "32", "--jobs", "2", "--device", "cpu",
                                    "--rounds", "2", "--dir", (dir.path() / "b").string()},
                                   dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, ContainsSubstring("medians of 2 rounds"));
  CHECK_THAT(r.out, ContainsSubstring("round 1: images/s") && ContainsSubstring("round 2: images/s"));
  CHECK_THAT(r.out, ContainsSubstring("gpuconv batch as a whole command (start to exit): "));
  // each round's whole command in its parts (the child's report)
  CHECK_THAT(r.out, ContainsSubstring(" + setup ") && ContainsSubstring(" + batch ") && ContainsSubstring(" + exit "));
  CHECK_THAT(r.out, ContainsSubstring("gpuconv batch (cpu)                           3"));
  CHECK_THAT(r.out, ContainsSubstring("csv,png,3,32,32,2,cpu,gaussian:3,"));
  CHECK(fs::exists(dir.path() / "b" / "out-batch" / "img00002.png"));  // the child's outputs, in --dir
}

TEST_CASE("CLI end to end: a good run, then the errors and their exit codes", "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in.png", out = dir / "out.png";
  REQUIRE(cv::imwrite(in.string(), test::test_image(40, 50, CV_8UC3, 1)));
  test::write_file(dir / "k.txt", "# emboss\n-2,-1,0\n-1,1,1\n0,1,2\n");
  const std::string input_bytes = test::read_file(in);

  SECTION("good run: the output is the in-process convolution") {
    const auto r = test::run_gpuconv({in.string(), (dir / "k.txt").string(), out.string(), "--device", "cpu",
                                      "--correlate", "--boundary", "replicate"}, dir.path());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    convolve_settings s;
    s.semantics.op = conv::operation::correlation;
    s.semantics.border = conv::boundary::replicate;
    const cv::Mat expected = in_process(in, (dir / "k.txt").string(), s);
    CHECK(cv::norm(read_image(out), expected, cv::NORM_INF) == 0);
    CHECK(test::temp_files_under(dir.path()).empty());
  }
  SECTION("named kernel, 16-bit output, clipping reported unless --quiet") {
    const auto out16 = dir / "out16.png";
    auto r = test::run_gpuconv({in.string(), "unsharp:1,3", out16.string(), "--device", "cpu", "--depth", "16",
                                "--scale", "300"}, dir.path());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(read_image(out16).depth() == CV_16U);
    CHECK_THAT(r.err, ContainsSubstring("pixels clipped"));
    r = test::run_gpuconv({in.string(), "unsharp:1,3", out16.string(), "--device", "cpu", "--depth", "16", "--scale",
                           "300", "--quiet"}, dir.path());
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
  }
  SECTION("--device auto without a GPU: a notice, then the CPU") {
    if (cuda_device_available()) SKIP("a CUDA device is present");
    // an image and kernel the one-image rule sends to CUDA on a few cores (cpu_before_cuda_starts:
    // 4000^2 with a 81 x 81 disk is ~0.4 s of CPU on 2 cores against CUDA's ~0.3 s)
    const auto big = dir / "big.png";
    REQUIRE(cv::imwrite(big.string(), test::test_image(4000, 4000, CV_8UC1, 3)));
    const bool cpu_first = app::cpu_before_cuda_starts(4000, 4000, *app::make_named_kernel("disk:40"), 0);
    const auto r = test::run_gpuconv({big.string(), "disk:40", out.string()}, dir.path());
    CHECK(r.exit_code == 0);
    if (cpu_first) SKIP("this machine's cores are expected to beat CUDA's start-up on it: no GPU asked for");
    CHECK_THAT(r.err, ContainsSubstring("using the CPU backend"));
  }
  SECTION("--device auto with a small image: the CPU, without asking for a GPU, no notice") {
    const auto r = test::run_gpuconv({in.string(), "box:3", out.string(), "--timing"}, dir.path());
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, !ContainsSubstring("using the CPU backend"));
    CHECK_THAT(r.err, !ContainsSubstring("cuda-init"));
    CHECK_THAT(r.err, ContainsSubstring("CPU backend"));
  }
  SECTION("a binary kernel file: the error escapes its bytes (\\xNN), none reaches the terminal raw") {
    test::write_file(dir / "bin.txt", std::string("1 2\x01\xff\xfe\x1b[31m 3\n", 13));
    const auto r = test::run_gpuconv({in.string(), (dir / "bin.txt").string(), out.string(), "--device", "cpu"},
                                     dir.path());
    CHECK(r.exit_code == exit_input);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, ContainsSubstring("\\x01\\xff\\xfe\\x1b[31m"));
    for (const char ch : r.err) CHECK((ch == '\n' || (static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f)));
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("printable keeps UTF-8 and escapes the rest") {
    CHECK(printable("caf\xc3\xa9 \xe6\x97\xa5") == "caf\xc3\xa9 \xe6\x97\xa5");
    CHECK(printable(std::string("a\0b\tc\x7f\xc0\xaf\xed\xa0\x80", 11)) ==
          "a\\x00b\\x09c\\x7f\\xc0\\xaf\\xed\\xa0\\x80");
  }
  SECTION("--device cuda without a GPU: exit 1, one line, nothing written") {
    if (cuda_device_available()) SKIP("a CUDA device is present");
    const auto r = test::run_gpuconv({in.string(), "box:3", out.string(), "--device", "cuda"}, dir.path());
    CHECK(r.exit_code == exit_failure);
    CHECK_THAT(r.err, ContainsSubstring("gpuconv: error: --device cuda"));
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("missing kernel: exit 3, named in the message") {
    const auto r = test::run_gpuconv({in.string(), (dir / "nope.txt").string(), out.string(), "--device", "cpu"},
                                     dir.path());
    CHECK(r.exit_code == exit_input);
    CHECK_THAT(r.err, ContainsSubstring("nope.txt") && ContainsSubstring("no such file and not a named kernel"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("ragged kernel file: exit 3 with the line number") {
    test::write_file(dir / "bad.txt", "1 2\n3\n");
    const auto r = test::run_gpuconv({in.string(), (dir / "bad.txt").string(), out.string()}, dir.path());
    CHECK(r.exit_code == exit_input);
    CHECK_THAT(r.err, ContainsSubstring("line 2"));
  }
  SECTION("bad option and bad value: exit 2") {
    CHECK(test::run_gpuconv({in.string(), "box:3", out.string(), "--frobnicate"}, dir.path()).exit_code == exit_usage);
    CHECK(test::run_gpuconv({in.string(), "box:3", out.string(), "--mode", "huge"}, dir.path()).exit_code == exit_usage);
    CHECK(test::run_gpuconv({in.string(), "gaussian:1,2", out.string()}, dir.path()).exit_code == exit_usage);
    CHECK(test::run_gpuconv({in.string(), "box:99", out.string(), "--mode", "valid", "--device", "cpu"}, dir.path())
              .exit_code == exit_usage);
    CHECK(test::run_gpuconv({in.string(), "box:3", (dir / "o.png").string(), "--depth", "32f"}, dir.path())
              .exit_code == exit_usage);
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("output == input is refused and the input is unchanged, also through another path") {
    auto r = test::run_gpuconv({in.string(), "box:3", in.string(), "--device", "cpu"}, dir.path());
    CHECK(r.exit_code == exit_usage);
    CHECK_THAT(r.err, ContainsSubstring("is the input"));
    fs::create_directories(dir / "sub");
    const auto other = (dir / "sub" / ".." / "in.png").string();
    r = test::run_gpuconv({in.string(), "box:3", other, "--device", "cpu"}, dir.path());
    CHECK(r.exit_code == exit_usage);
    fs::create_hard_link(in, dir / "hard.png");
    r = test::run_gpuconv({in.string(), "box:3", (dir / "hard.png").string(), "--device", "cpu"}, dir.path());
    CHECK(r.exit_code == exit_usage);
    CHECK(test::read_file(in) == input_bytes);
  }
  SECTION("corrupt input: exit 3; unwritable output: exit 4") {
    test::write_file(dir / "corrupt.png", "\x89PNG\r\n\x1a\n garbage");
    auto r = test::run_gpuconv({(dir / "corrupt.png").string(), "box:3", out.string(), "--device", "cpu"}, dir.path());
    CHECK(r.exit_code == exit_input);
    CHECK_THAT(r.err, ContainsSubstring("corrupt.png"));
    r = test::run_gpuconv({in.string(), "box:3", (dir / "no" / "dir" / "o.png").string(), "--device", "cpu"},
                          dir.path());
    CHECK(r.exit_code == exit_output);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  SECTION("--version, --help, kernels print on stdout and exit 0") {
    auto r = test::run_gpuconv({"--version"}, dir.path());
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind(version_string() + "\nGPU JPEG: ", 0) == 0);  // then whether nvJPEG is there
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2);
    r = test::run_gpuconv({"--help"}, dir.path());
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, ContainsSubstring("Exit codes"));
    r = test::run_gpuconv({"kernels"}, dir.path());
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, ContainsSubstring("gaussian:SIGMA"));
  }
}

TEST_CASE("batch end to end: good, corrupt and dangling files, nested folders, reruns", "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in";
  fs::create_directories(in / "nested" / "deeper");
  REQUIRE(cv::imwrite((in / "a.png").string(), test::test_image(30, 40, CV_8UC3, 1)));
  REQUIRE(cv::imwrite((in / "b.TIF").string(), test::test_image(25, 20, CV_16UC1, 2)));
  REQUIRE(cv::imwrite((in / "nested" / "c.png").string(), test::test_image(16, 16, CV_8UC4, 3)));
  REQUIRE(cv::imwrite((in / "nested" / "deeper" / "d.jpg").string(), test::test_image(20, 20, CV_8UC3, 4)));
  test::write_file(in / "notes.txt", "not an image, not an image extension");
  {
    cv::RNG rng(5);
    std::string junk(2000, '\0');
    for (char& ch : junk) ch = char(rng.uniform(0, 256));
    test::write_file(in / "corrupt.png", junk);
  }
  fs::create_symlink(in / "gone.png", in / "dangling.png");
  const auto out = dir / "out";
  const std::vector<std::string> base{"batch", in.string(), "box:3", out.string(), "--device", "cpu", "--jobs", "2"};
  auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };

  auto r = test::run_gpuconv(with({"--recursive"}), dir.path());
  INFO(r.err);
  CHECK(r.exit_code == exit_failure);
  CHECK_THAT(r.err, ContainsSubstring("done 4, skipped 0, failed 2"));
  CHECK_THAT(r.err, ContainsSubstring("corrupt.png") && ContainsSubstring("dangling.png"));
  for (const char* f : {"a.png", "b.TIF", "nested/c.png", "nested/deeper/d.jpg"}) {
    INFO(f);
    CHECK(fs::exists(out / f));
  }
  CHECK_FALSE(fs::exists(out / "notes.txt"));
  CHECK_FALSE(fs::exists(out / "corrupt.png"));
  CHECK(test::temp_files_under(dir.path()).empty());
  // the outputs are what the single-image path computes
  convolve_settings s;
  CHECK(cv::norm(read_image(out / "a.png"), in_process(in / "a.png", "box:3", s), cv::NORM_INF) == 0);
  CHECK(cv::norm(read_image(out / "b.TIF"), in_process(in / "b.TIF", "box:3", s), cv::NORM_INF) == 0);

  // rerun: existing outputs fail by default, are skipped or overwritten on request
  r = test::run_gpuconv(with({"--recursive"}), dir.path());
  CHECK(r.exit_code == exit_failure);
  CHECK_THAT(r.err, ContainsSubstring("done 0, skipped 0, failed 6") && ContainsSubstring("exists"));
  r = test::run_gpuconv(with({"--recursive", "--skip-existing"}), dir.path());
  CHECK_THAT(r.err, ContainsSubstring("done 0, skipped 4, failed 2"));
  r = test::run_gpuconv(with({"--recursive", "--overwrite", "--ext", "png"}), dir.path());
  CHECK_THAT(r.err, ContainsSubstring("done 2, skipped 0, failed 2"));

  // only good files, not recursive, another format: exit 0
  fs::remove(in / "corrupt.png");
  fs::remove(in / "dangling.png");
  r = test::run_gpuconv(with({"--format", "tif", "--quiet"}), dir.path());
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(out / "a.tif"));
  CHECK_FALSE(fs::exists(out / "nested" / "c.tif"));
  CHECK(r.err.empty());
}

TEST_CASE("batch: OUT_DIR inside IN_DIR is never rescanned; outputs never replace inputs", "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in";
  fs::create_directories(in / "sub");
  REQUIRE(cv::imwrite((in / "a.png").string(), test::test_image(20, 20, CV_8UC1, 1)));
  REQUIRE(cv::imwrite((in / "sub" / "b.png").string(), test::test_image(20, 20, CV_8UC1, 2)));
  const auto out = in / "out";
  for (int run = 0; run < 2; ++run) {
    const auto r = test::run_gpuconv({"batch", in.string(), "box:3", out.string(), "--recursive", "--overwrite",
                                      "--device", "cpu"}, dir.path());
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, ContainsSubstring("done 2, skipped 0, failed 0"));
  }
  CHECK_FALSE(fs::exists(out / "out"));
  auto r = test::run_gpuconv({"batch", in.string(), "box:3", in.string(), "--device", "cpu"}, dir.path());
  CHECK(r.exit_code == exit_usage);
  // two inputs with one output name
  REQUIRE(cv::imwrite((in / "a.bmp").string(), test::test_image(20, 20, CV_8UC1, 3)));
  r = test::run_gpuconv({"batch", in.string(), "box:3", (dir / "o2").string(), "--format", "png", "--device", "cpu"},
                        dir.path());
  CHECK(r.exit_code == exit_failure);
  CHECK_THAT(r.err, ContainsSubstring("also the output of another input"));
}

TEST_CASE("batch: an unreadable file (chmod 000) is reported and skipped", "[app][cli]") {
  if (::geteuid() == 0) SKIP("running as root: chmod 000 does not stop root from reading");
  test::scratch_dir dir;
  const auto in = dir / "in";
  fs::create_directories(in);
  REQUIRE(cv::imwrite((in / "ok.png").string(), test::test_image(10, 10, CV_8UC1)));
  REQUIRE(cv::imwrite((in / "locked.png").string(), test::test_image(10, 10, CV_8UC1)));
  fs::permissions(in / "locked.png", fs::perms::none);
  const auto r = test::run_gpuconv({"batch", in.string(), "box:3", (dir / "out").string(), "--device", "cpu"},
                                   dir.path());
  CHECK(r.exit_code == exit_failure);
  CHECK_THAT(r.err, ContainsSubstring("done 1, skipped 0, failed 1") && ContainsSubstring("locked.png"));
}

TEST_CASE("batch --stop-on-error and --io-only", "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in";
  fs::create_directories(in);
  test::write_file(in / "a-corrupt.png", "nope");
  for (int i = 0; i < 6; ++i)
    REQUIRE(cv::imwrite((in / ("b" + std::to_string(i) + ".png")).string(), test::test_image(64, 64, CV_8UC3, i)));
  auto r = test::run_gpuconv({"batch", in.string(), "box:3", (dir / "o1").string(), "--device", "cpu", "--jobs", "1",
                              "--stop-on-error"}, dir.path());
  CHECK(r.exit_code == exit_failure);
  CHECK_THAT(r.err, ContainsSubstring("failed 1") && ContainsSubstring("not processed"));
  r = test::run_gpuconv({"batch", in.string(), "box:3", (dir / "o2").string(), "--io-only", "--quiet"}, dir.path());
  CHECK(r.exit_code == exit_failure);
  CHECK(cv::norm(read_image(dir / "o2" / "b3.png"), read_image(in / "b3.png"), cv::NORM_INF) == 0);
}

TEST_CASE("batch --timing: the command's parts, the batch's own clock among them", "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in";
  fs::create_directories(in);
  for (int i = 0; i < 4; ++i)
    REQUIRE(cv::imwrite((in / ("b" + std::to_string(i) + ".png")).string(), test::test_image(64, 64, CV_8UC3, i)));
  const auto r = test::run_gpuconv({"batch", in.string(), "box:3", (dir / "out").string(), "--device", "cpu",
                                    "--jobs", "2", "--quiet", "--timing"}, dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(dir / "out" / "b3.png"));
  // each part's seconds, by name
  auto seconds = [&](const std::string& part) {
    const auto at = r.err.find("\n  " + part + " ");
    REQUIRE(at != std::string::npos);
    return std::stod(r.err.substr(at + 3 + part.size()));
  };
  CHECK_THAT(r.err, ContainsSubstring("gpuconv: timing (batch)") && ContainsSubstring("4 images: the batch's own clock"));
  const double startup = seconds("start-up"), setup = seconds("setup"), batch = seconds("batch"),
               after = seconds("after"), total = seconds("total");
  CHECK(startup >= 0);
  CHECK(setup >= 0);
  CHECK(batch > 0);
  CHECK(after >= 0);
  CHECK(total >= startup + setup + batch + after - 1e-3);  // the parts in order, none counted twice
  CHECK(total < startup + setup + batch + after + 0.05);
  CHECK_THAT(r.err, ContainsSubstring("peak RSS"));
}

TEST_CASE("batch: SIGINT stops the run, prints the summary, exits 130, leaves no temp file", "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in";
  fs::create_directories(in);
  const cv::Mat img = test::test_image(256, 256, CV_8UC3, 1);
  for (int i = 0; i < 60; ++i) REQUIRE(cv::imwrite((in / ("i" + std::to_string(i) + ".png")).string(), img));
  const pid_t pid = test::spawn_gpuconv({"batch", in.string(), "gaussian:10", (dir / "out").string(), "--device",
                                         "cpu", "--jobs", "1"}, dir.path());
  REQUIRE(pid > 0);
  // signal once the first output exists: the handlers are installed and the run is under way
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto started = [&] {
    std::error_code ec;
    return fs::exists(dir / "out", ec) && !fs::is_empty(dir / "out", ec);
  };
  while (!started() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ::kill(pid, SIGINT);
  const auto r = test::wait_gpuconv(pid, dir.path());
  INFO(r.err);
  if (r.exit_code == 0) SKIP("the batch finished before the signal arrived");
  CHECK(r.exit_code == exit_sigint);
  CHECK_THAT(r.err, ContainsSubstring("interrupted"));
  CHECK(test::temp_files_under(dir.path()).empty());
  // every output present is a whole image
  if (fs::exists(dir / "out"))
    for (const auto& e : fs::recursive_directory_iterator(dir / "out"))
      if (!e.is_directory()) CHECK(read_image(e.path()).cols == 256);
}
