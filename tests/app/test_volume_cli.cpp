// The stack commands end to end through the built gpuconv binary: `gpuconv STACK PSF OUT`
// against the direct double 3D reference (conv/reference3d.hpp), kernels of every kind on a
// stack, bad stacks and PSFs with their exit codes, and `gpuconv deconvolve` (parsing, exit
// codes, the same result as the library in process). The GPU cases carry [gpu].
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <opencv2/imgcodecs.hpp>

#include "cli.hpp"
#include "conv/deconvolve.hpp"
#include "conv/reference3d.hpp"
#include "errors.hpp"
#include "fft/device/cuda_check.hpp"
#include "kernel_io.hpp"
#include "stack_io.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

volume make_volume(long long d, long long h, long long w, int cv_depth, std::uint64_t seed) {
  volume v;
  v.depth = d;
  v.height = h;
  v.width = w;
  v.cv_depth = cv_depth;
  cv::RNG rng(seed);
  const double top = cv_depth == CV_8U ? 255 : cv_depth == CV_16U ? 65535 : 1;
  for (long long z = 0; z < d; ++z)
    for (long long y = 0; y < h; ++y)
      for (long long x = 0; x < w; ++x) {
        const double smooth = 0.5 + 0.3 * std::sin(0.3 * x + 0.2 * y) * std::cos(0.4 * z);
        double s = top * (0.8 * smooth + 0.2 * rng.uniform(0.0, 1.0));
        if (cv_depth != CV_32F) s = std::round(s);
        v.values.push_back(float(s));
      }
  return v;
}

fs::path save(const test::scratch_dir& dir, const std::string& name, const volume& v) {
  const fs::path p = dir / name;
  write_stack(p, v, v.cv_depth);
  return p;
}

// The reference: conv::direct_convolve3d in double of the stack with the kernel as the CLI
// resolves it.
std::vector<double> reference(const volume& in, const kernel& k, const conv::options& o) {
  const auto g = conv::make_geometry3d(in.depth, in.height, in.width, k.depth, k.height, k.width, o.mode);
  std::vector<double> out(std::size_t(g.out_d * g.out_h * g.out_w));
  conv::direct_convolve3d(in.values.data(), in.depth, in.height, in.width, 1, k.values.data(), k.depth, k.height,
                          k.width, o, out.data());
  return out;
}

void check_stack_convolution(const std::string& device) {
  test::scratch_dir dir;
  const volume psf = make_volume(5, 7, 3, CV_32F, 11);
  const fs::path psf_file = save(dir, "psf.tif", psf);
  const kernel k = resolve_volume_kernel(psf_file.string());
  struct run_case {
    std::vector<std::string> options;
    conv::options semantics;
  };
  conv::options same_reflect;
  same_reflect.border = conv::boundary::reflect;
  conv::options full_zero;
  full_zero.mode = conv::output_mode::full;
  full_zero.border = conv::boundary::zero;
  conv::options valid_corr;
  valid_corr.mode = conv::output_mode::valid;
  valid_corr.op = conv::operation::correlation;
  conv::options wrap_const;
  wrap_const.border = conv::boundary::constant;
  wrap_const.constant_value = 7;
  for (const int depth : {CV_32F, CV_16U, CV_8U})
    for (const auto& [options, semantics] : std::vector<run_case>{{{"--boundary", "reflect"}, same_reflect},
                                                                  {{"--mode", "full", "--boundary", "zero"}, full_zero},
                                                                  {{"--mode", "valid", "--correlate"}, valid_corr},
                                                                  {{"--boundary", "constant:7"}, wrap_const}}) {
      CAPTURE(depth, options);
      const volume in = make_volume(9, 20, 17, depth, 3);
      const fs::path in_file = save(dir, "in.tif", in), out_file = dir / "out.tif";
      std::vector<std::string> args{in_file.string(), psf_file.string(), out_file.string(), "--device", device, "-q"};
      args.insert(args.end(), options.begin(), options.end());
      const auto r = test::run_gpuconv(args, dir.path());
      REQUIRE(r.exit_code == 0);
      CHECK(r.err.empty());
      const volume out = read_stack(out_file, "out");
      const std::vector<double> ref = reference(in, k, semantics);
      REQUIRE(std::size_t(out.voxels()) == ref.size());
      CHECK(out.cv_depth == depth);
      double num = 0, den = 0, worst = 0;
      for (std::size_t i = 0; i < ref.size(); ++i) {
        num += (out.values[i] - ref[i]) * (out.values[i] - ref[i]);
        den += ref[i] * ref[i];
        if (depth != CV_32F) {
          const double top = depth == CV_8U ? 255 : 65535;
          worst = std::max(worst, std::abs(out.values[i] - std::clamp(std::nearbyint(ref[i]), 0.0, top)));
        }
      }
      if (depth == CV_32F) {
        CHECK(std::sqrt(num / den) < 1e-5);  // fp32 FFT against double: ~1e-6
      } else {
        CHECK(worst <= 1);  // a near-tie may round the other way after the fp32 FFT
      }
    }
}

}  // namespace

TEST_CASE("stack CLI: 3D convolution equals the direct double reference (modes, borders, depths)", "[app][cli][stack]") {
  check_stack_convolution("cpu");
}

TEST_CASE("stack CLI: 3D convolution on CUDA", "[app][cli][stack][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  check_stack_convolution("cuda");
}

namespace {

// 8/16-bit stacks whose result cannot leave the range (kernel >= 0 summing to 1, in-range
// constant) keep their samples narrow through the plan (volume_commands.cpp, narrow_route):
// the output equals the float route's (--depth 32f) rounded half to even and saturated, byte for
// byte; --timing names the route. A kernel with negative taps, an out-of-range constant or
// --scale take the float route (and report clipping), as does a fractional constant (the plan
// would round it to the sample type).
void check_narrow_route(const std::string& device) {
  test::scratch_dir dir;
  const fs::path psf_file = save(dir, "psf.tif", make_volume(5, 7, 3, CV_32F, 11));
  for (const int depth : {CV_16U, CV_8U})
    for (const std::vector<std::string>& options : std::vector<std::vector<std::string>>{
             {"--boundary", "reflect"}, {"--mode", "full", "--boundary", "zero"}, {"--boundary", "constant:7"}}) {
      CAPTURE(depth, options);
      const volume in = make_volume(9, 40, 33, depth, 3);
      const fs::path in_file = save(dir, "in.tif", in), narrow = dir / "narrow.tif", wide = dir / "wide.tif";
      std::vector<std::string> args{in_file.string(), psf_file.string(), narrow.string(), "--device", device, "--timing"};
      args.insert(args.end(), options.begin(), options.end());
      const auto r = test::run_gpuconv(args, dir.path());
      REQUIRE(r.exit_code == 0);
      CHECK_THAT(r.err, ContainsSubstring(depth == CV_8U ? "8-bit samples kept" : "16-bit samples kept"));
      args[2] = wide.string();
      args.insert(args.end(), {"--depth", "32f"});
      const auto f = test::run_gpuconv(args, dir.path());
      REQUIRE(f.exit_code == 0);
      CHECK_THAT(f.err, ContainsSubstring("as float"));
      const volume a = read_stack(narrow, "narrow"), b = read_stack(wide, "wide");
      REQUIRE(a.voxels() == b.voxels());
      CHECK(a.cv_depth == depth);
      const double top = depth == CV_8U ? 255 : 65535;
      long long differ = 0;
      for (std::size_t i = 0; i < a.values.size(); ++i)
        differ += a.values[i] != float(std::clamp(double(cvRound(b.values[i])), 0.0, top));
      CHECK(differ == 0);
    }
  // the float route where the result may leave the range: negative taps clip and say so
  const volume in = make_volume(6, 16, 18, CV_8U, 5);
  const fs::path in_file = save(dir, "in8.tif", in), out = dir / "out8.tif";
  const fs::path sharpen = dir / "sharpen.txt";
  std::ofstream(sharpen) << "0 -1 0\n-1 5 -1\n0 -1 0\n";
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {sharpen.string()}, {"box:3", "--boundary", "constant:2000"}, {"box:3", "--scale", "1.5"},
           {"box:3", "--boundary", "constant:7.5"}}) {
    CAPTURE(extra);
    std::vector<std::string> args{in_file.string(), extra[0], out.string(), "--device", device, "--timing"};
    args.insert(args.end(), extra.begin() + 1, extra.end());
    const auto r = test::run_gpuconv(args, dir.path());
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.err, ContainsSubstring("as float"));
    if (extra.back() != "constant:7.5") CHECK_THAT(r.err, ContainsSubstring("voxels clipped"));
  }
}

}  // namespace

TEST_CASE("stack CLI: 8/16-bit samples stay narrow where the result cannot leave the range", "[app][cli][stack]") {
  check_narrow_route("cpu");
}

TEST_CASE("stack CLI: 8/16-bit samples stay narrow on CUDA", "[app][cli][stack][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  check_narrow_route("cuda");
}

TEST_CASE("stack CLI: gaussian3d, 2D kernels per slice, --scale/--offset/--depth", "[app][cli][stack]") {
  test::scratch_dir dir;
  const volume in = make_volume(6, 16, 18, CV_16U, 5);
  const fs::path in_file = save(dir, "in.tif", in), out_file = dir / "out.tif";
  for (const std::string spec : {"gaussian3d:1,0.8,0.6", "box:3", "gaussian:1"}) {
    CAPTURE(spec);
    const auto r = test::run_gpuconv({in_file.string(), spec, out_file.string(), "--device", "cpu", "--depth", "32f",
                                      "--scale", "0.5", "--offset", "3"},
                                     dir.path());
    REQUIRE(r.exit_code == 0);
    const volume out = read_stack(out_file, "out");
    CHECK(out.cv_depth == CV_32F);
    const kernel k = resolve_volume_kernel(spec);
    CHECK(k.depth == (spec == "gaussian3d:1,0.8,0.6" ? 5 : 1));
    const std::vector<double> ref = reference(in, k, conv::options{});
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(out.values[i] - (0.5 * ref[i] + 3)));
    CHECK(worst < 0.05);  // of values up to 32768
  }
  CHECK(test::temp_files_under(dir.path()).empty());
}

TEST_CASE("stack CLI: --device auto takes the CPU for a small stack and --timing says why", "[app][cli][stack]") {
  // a stack the CPU backend convolves in well under CUDA's start-up on any machine
  test::scratch_dir dir;
  const volume in = make_volume(6, 16, 18, CV_16U, 9);
  const fs::path in_file = save(dir, "in.tif", in), psf = save(dir, "psf.tif", make_volume(3, 3, 3, CV_32F, 4));
  const fs::path out = dir / "out.tif", cpu_out = dir / "cpu.tif";
  auto r = test::run_gpuconv({in_file.string(), psf.string(), out.string(), "--timing"}, dir.path());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, ContainsSubstring("--device auto picks the CPU (expected: CPU"));
  REQUIRE(test::run_gpuconv({in_file.string(), psf.string(), cpu_out.string(), "--device", "cpu"}, dir.path()).exit_code == 0);
  CHECK(test::read_file(out) == test::read_file(cpu_out));
  // deconvolve: an iteration counts two convolutions, still the CPU here
  r = test::run_gpuconv({"deconvolve", in_file.string(), psf.string(), out.string(), "-n", "3", "--timing"}, dir.path());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, ContainsSubstring("--device auto picks the CPU (expected: CPU"));
  // a named device: no rule, no line
  r = test::run_gpuconv({in_file.string(), psf.string(), out.string(), "--device", "cpu", "--timing"}, dir.path());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, !ContainsSubstring("--device auto"));
}

TEST_CASE("stack CLI: bad stacks, PSFs and outputs give the documented exit codes", "[app][cli][stack]") {
  test::scratch_dir dir;
  const volume in = make_volume(4, 12, 10, CV_8U, 1);
  const fs::path stack = save(dir, "in.tif", in), psf = save(dir, "psf.tif", make_volume(3, 3, 3, CV_32F, 2));
  const std::string bytes = test::read_file(stack);
  auto run = [&](std::vector<std::string> args) { return test::run_gpuconv(args, dir.path()); };
  const std::string out = (dir / "out.tif").string();

  SECTION("truncated stack: input, exit 3, the file named") {
    // cut in the last page's samples, and inside the second directory (header 8 bytes, a
    // directory 138, a page 120)
    test::write_file(dir / "cut.tif", bytes.substr(0, bytes.size() - 50));
    test::write_file(dir / "cut2.tif", bytes.substr(0, 8 + 138 + 120 + 10));
    for (const char* name : {"cut.tif", "cut2.tif"}) {
      const auto r = run({(dir / name).string(), psf.string(), out});
      CAPTURE(name, r.err);
      CHECK(r.exit_code == 3);
      CHECK_THAT(r.err, ContainsSubstring(name) && ContainsSubstring("truncated or corrupt"));
    }
  }
  SECTION("empty stack file, empty PSF file: exit 3") {
    test::write_file(dir / "empty.tif", "");
    // an empty file is no stack: the 2D path reports it (with a 2D kernel; a 3D one is
    // refused first, as the 2D path checks the kernel before reading)
    auto r = run({(dir / "empty.tif").string(), "gaussian:1", out});
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.err, ContainsSubstring("empty.tif") && ContainsSubstring("empty file"));
    r = run({"deconvolve", (dir / "empty.tif").string(), psf.string(), out});
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.err, ContainsSubstring("empty.tif") && ContainsSubstring("empty file"));
    r = run({stack.string(), (dir / "empty.tif").string(), out});
    CHECK(r.exit_code == 3);
  }
  SECTION("wrong PSF dimensions") {
    // a PSF larger than the stack with --mode valid: usage, exit 2
    const fs::path big = save(dir, "big.tif", make_volume(5, 3, 3, CV_32F, 3));
    auto r = run({stack.string(), big.string(), out, "--mode", "valid"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, ContainsSubstring("valid"));
    // PSF pages of different sizes: input, exit 3
    std::vector<cv::Mat> pages{cv::Mat(3, 3, CV_32F, cv::Scalar(1)), cv::Mat(4, 3, CV_32F, cv::Scalar(1))};
    REQUIRE(cv::imwritemulti((dir / "ragged.tif").string(), pages));
    r = run({stack.string(), (dir / "ragged.tif").string(), out});
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.err, ContainsSubstring("page 2 of 2"));
    // a 3D PSF on a single image: usage, exit 2
    cv::imwrite((dir / "flat.png").string(), cv::Mat(8, 8, CV_8U, cv::Scalar(9)));
    r = run({(dir / "flat.png").string(), psf.string(), (dir / "o.png").string()});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, ContainsSubstring("is 3D"));
  }
  SECTION("outputs: not TIFF, or the input itself: exit 2; a missing directory: exit 4") {
    CHECK(run({stack.string(), psf.string(), (dir / "o.png").string()}).exit_code == 2);
    CHECK(run({stack.string(), psf.string(), stack.string()}).exit_code == 2);
    const auto r = run({stack.string(), psf.string(), (dir / "no" / "o.tif").string(), "--device", "cpu"});
    CHECK(r.exit_code == 4);
    CHECK(test::read_file(stack) == bytes);
  }
  CHECK(test::temp_files_under(dir.path()).empty());
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("deconvolve: parsing", "[app][cli][deconvolve]") {
  const cli_options d = parse_cli({"deconvolve", "s.tif", "p.tif", "o.tif"});
  CHECK(d.cmd == command::deconvolve);
  CHECK(d.deconvolve.iterations == 10);
  CHECK(d.deconvolve.tv == 0);
  CHECK(d.settings.semantics.border == conv::boundary::reflect);
  CHECK(d.settings.depth == output_depth::f32);
  const cli_options o =
      parse_cli({"deconvolve", "s.tif", "gaussian3d:1", "o.tif", "-n", "50", "--tv", "0.002", "--boundary", "zero",
                 "--depth", "same", "--device", "cpu", "--epsilon", "1e-4"});
  CHECK(o.deconvolve.iterations == 50);
  CHECK(o.deconvolve.tv == 0.002);
  CHECK(o.deconvolve.epsilon == 1e-4);
  CHECK(o.settings.semantics.border == conv::boundary::zero);
  CHECK(o.settings.depth == output_depth::same);
  for (const auto& bad : std::vector<std::vector<std::string>>{{"-n", "0"},
                                                                {"--tv", "0.2"},
                                                                {"--tv", "-1"},
                                                                {"--epsilon", "0"},
                                                                {"--mode", "full"},
                                                                {"--boundary", "nope"}}) {
    std::vector<std::string> args{"deconvolve", "s.tif", "p.tif", "o.tif"};
    args.insert(args.end(), bad.begin(), bad.end());
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_cli(args), usage_error);
  }
  CHECK_THROWS_AS(parse_cli({"deconvolve", "s.tif", "p.tif"}), usage_error);
}

namespace {

void check_deconvolve_cli(const std::string& device) {
  test::scratch_dir dir;
  const volume in = make_volume(6, 20, 24, CV_16U, 8);
  const fs::path stack = save(dir, "in.tif", in), out = dir / "out.tif";
  const auto r = test::run_gpuconv({"deconvolve", stack.string(), "gaussian3d:1.2,1.2,0.8", out.string(), "-n", "7",
                                    "--tv", "0.002", "--device", device},
                                   dir.path());
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());  // stderr is no terminal: no progress
  const volume got = read_stack(out, "out");
  REQUIRE((got.depth == 6 && got.height == 20 && got.width == 24 && got.cv_depth == CV_32F));
  // the library in process on the CPU backend
  const kernel k = resolve_volume_kernel("gaussian3d:1.2,1.2,0.8");
  conv::deconvolve_options o;
  o.iterations = 7;
  o.tv_lambda = 0.002f;
  o.device = conv::backend::cpu;
  std::vector<float> want(in.values.size());
  conv::richardson_lucy(6, 20, 24, k.values.data(), k.depth, k.height, k.width, o).run(in.values.data(), want.data());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    num += double(got.values[i] - want[i]) * (got.values[i] - want[i]);
    den += double(want[i]) * want[i];
  }
  CHECK(std::sqrt(num / den) < (device == "cpu" ? 1e-7 : 1e-5));
}

}  // namespace

TEST_CASE("deconvolve CLI: the library's result, written as a float stack", "[app][cli][deconvolve]") {
  check_deconvolve_cli("cpu");
}

TEST_CASE("deconvolve CLI on CUDA: the CPU backend's result within 1e-5", "[app][cli][deconvolve][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  check_deconvolve_cli("cuda");
}

TEST_CASE("deconvolve CLI: exit codes", "[app][cli][deconvolve]") {
  test::scratch_dir dir;
  const fs::path stack = save(dir, "in.tif", make_volume(3, 8, 8, CV_8U, 4));
  const std::string out = (dir / "out.tif").string();
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"deconvolve"};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_gpuconv(args, dir.path());
  };
  CHECK(run({stack.string(), "gaussian3d:1", out, "-n", "2", "--device", "cpu", "--depth", "8"}).exit_code == 0);
  CHECK(read_stack(out, "out").cv_depth == CV_8U);
  CHECK(run({stack.string(), "gaussian3d:1", out, "-n", "0"}).exit_code == 2);
  CHECK(run({stack.string(), "gaussian3d:1", out, "--tv", "0.5"}).exit_code == 2);
  CHECK(run({stack.string(), "gaussian3d:1", (dir / "o.png").string()}).exit_code == 2);
  CHECK(run({stack.string(), "gaussian3d:1", stack.string()}).exit_code == 2);
  CHECK(run({(dir / "none.tif").string(), "gaussian3d:1", out, "--device", "cpu"}).exit_code == 3);
  CHECK(run({stack.string(), "nonsense", out}).exit_code == 3);
  const auto negative = run({stack.string(), "laplacian", out, "--device", "cpu"});  // only a centre of -4 ... and 1s
  CHECK(negative.exit_code == 0);
  CHECK_THAT(negative.err, ContainsSubstring("1 negative values set to 0"));
  test::write_file(dir / "zero.txt", "0 0 0\n0 -1 0\n");
  const auto zero = run({stack.string(), (dir / "zero.txt").string(), out, "--device", "cpu"});
  CHECK(zero.exit_code == 3);
  CHECK_THAT(zero.err, ContainsSubstring("no positive value"));
  CHECK(run({stack.string(), "gaussian3d:1", (dir / "no" / "o.tif").string(), "--device", "cpu"}).exit_code == 4);
  if (!cuda_device_available()) {
    const auto r = run({stack.string(), "gaussian3d:1", out, "--device", "cuda"});
    CHECK(r.exit_code == 1);
  }
  CHECK(test::temp_files_under(dir.path()).empty());
}

TEST_CASE("batch: a stack in the folder is a failure naming it, not its first page", "[app][cli][stack]") {
  test::scratch_dir dir;
  fs::create_directories(dir / "in");
  save(dir, "in/stack.tif", make_volume(3, 8, 8, CV_8U, 6));
  cv::imwrite((dir / "in" / "a.png").string(), cv::Mat(8, 8, CV_8U, cv::Scalar(40)));
  const auto r = test::run_gpuconv({"batch", (dir / "in").string(), "box:3", (dir / "out").string(), "--device", "cpu"},
                                   dir.path());
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, ContainsSubstring("stack.tif") && ContainsSubstring("a stack of 3 pages"));
  CHECK(fs::exists(dir / "out" / "a.png"));
  CHECK_FALSE(fs::exists(dir / "out" / "stack.tif"));
}
