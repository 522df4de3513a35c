// The stack commands: `gpuconv STACK KERNEL OUT` on a multi-page TIFF (3D convolution through
// conv::plan3d) and `gpuconv deconvolve` (Richardson-Lucy, conv::richardson_lucy). Both read
// the stack as float voxels in stored units, run on the CPU or CUDA backend, and write a
// multi-page TIFF atomically (stack_io.hpp).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "commands.hpp"
#include "conv/deconvolve.hpp"
#include "conv/plan3d.hpp"
#include "cuda_startup.hpp"
#include "errors.hpp"
#include "interrupt.hpp"
#include "kernel_io.hpp"
#include "stack_io.hpp"
#include "stage_timer.hpp"

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

std::string shape_text(long long w, long long h, long long d) {
  return std::to_string(w) + " x " + std::to_string(h) + " x " + std::to_string(d);
}

// The checks both commands make before reading: OUTPUT is a .tif and not the input itself.
void check_stack_paths(const cli_options& o) {
  refuse_output_over_input(o);
  check_stack_output(fs::path(o.output));
}

// The convolution layer's checks (std::invalid_argument) as usage errors naming the files.
usage_error named(const cli_options& o, const std::invalid_argument& e) {
  return usage_error("input '" + o.input + "' with kernel '" + o.kernel + "': " + e.what());
}

// Writes `result` in the depth asked for (same: the input's) and reports clipping.
int finish(const cli_options& o, const volume& result, int input_depth, double scale, double offset, stage_timer& timer,
           std::ostream& err) {
  if (interrupted()) return interrupt_exit_code();
  const long long clipped = write_stack(o.output, result, output_cv_depth(o.settings.depth, input_depth), scale, offset);
  timer.mark("write", "convert, encode, write and sync");
  if (interrupted()) return interrupt_exit_code();
  if (clipped && !o.quiet) err << "gpuconv: " << clipped << " voxels clipped\n";
  timer.print(err);
  return exit_ok;
}

std::string device_note(const conv::plan_options& p) {
  return p.device == conv::backend::cuda ? "CUDA" : "CPU";
}

// 8/16-bit samples may go to the plan and come back as stored (half the bytes across PCIe, no
// float copies on the host) where the result is the same as the float route's: output in the
// input's depth, no scale or offset, and a kernel and outside value that cannot take a voxel out
// of the depth's range (kernel values >= 0 summing to at most 1, an integer constant within the range),
// so that the float route's clip count would be 0 but for the transform's float rounding. The
// plan rounds (half to even) and saturates as volume_pages does.
bool narrow_route(const cli_options& o, const kernel& k, int cv_depth) {
  if (cv_depth != CV_8U && cv_depth != CV_16U) return false;
  if (output_cv_depth(o.settings.depth, cv_depth) != cv_depth || o.settings.scale != 1 || o.settings.offset != 0) return false;
  double sum = 0;
  for (float v : k.values) {
    if (!(v >= 0)) return false;
    sum += v;
  }
  const double top = cv_depth == CV_8U ? 255 : 65535;
  const conv::options& m = o.settings.semantics;
  // the plan rounds the constant to the sample type (map3d_for); the float route keeps it as given
  if (m.border == conv::boundary::constant &&
      !(m.constant_value >= 0 && m.constant_value <= top && m.constant_value == std::nearbyint(m.constant_value)))
    return false;
  return sum <= 1 + 1e-6;
}

// CUDA's start-up on its own thread (cuda_startup.hpp) while the command reads the kernel and
// the stack: at once for --device cuda; under --device auto once choose_stack_device has
// decided (and not when it took the CPU); never for --device cpu.
void start_cuda(const cli_options& o, cuda_startup& init) {
  if (o.settings.device == conv::backend::cuda) init.start();
}

// --device auto on a stack: the CPU backend where it is expected to finish the command's
// `convolutions` before CUDA would: conv::cpu3d_estimated_seconds against CUDA's start-up, plan
// and exit (cuda_command_overhead_s), its copies and first convolution (~1.3 ns a
// voxel) and each further convolution on the device (~0.1 ns a voxel: deconvolve's iterations),
// all measured on the H100 host (16 cores, docs/benchmarks.md, session 35). A
// stack whose size its header does not give, or a kernel the plan will refuse, keeps CUDA
// (the plan then reports the error as before). Sets o.settings.device, then starts CUDA where it
// is kept; --timing shows the figures.
void choose_stack_device(cli_options& o, const kernel& k, int convolutions, cuda_startup& init, stage_timer& timer) {
  if (o.settings.device != conv::backend::automatic) return;
  std::string note = "picks CUDA (the stack's size unknown)";
  if (const auto shape = peek_stack_shape(o.input)) {
    conv::plan_options p;
    p.semantics = o.settings.semantics;
    p.threads = o.settings.threads;
    try {
      const double cpu_s = convolutions * conv::cpu3d_estimated_seconds(shape->depth, shape->height, shape->width, 1,
                                                                        k.values.data(), k.depth, k.height, k.width, p);
      const double voxels = double(shape->depth) * double(shape->height) * double(shape->width);
      const double cuda_s = cuda_command_overhead_s + voxels * 1.3e-9 + (convolutions - 1) * voxels * 0.1e-9;
      if (cpu_s < cuda_s) o.settings.device = conv::backend::cpu;
      char text[128];
      std::snprintf(text, sizeof text, "picks %s (expected: CPU %.3f s, CUDA %.3f s)",
                    o.settings.device == conv::backend::cpu ? "the CPU" : "CUDA", cpu_s, cuda_s);
      note = text;
    } catch (const std::invalid_argument&) {
      note = "picks CUDA (the plan will say what is wrong)";
    }
  }
  timer.mark("device", "--device auto " + note);
  if (o.settings.device != conv::backend::cpu) init.start();
}

// The device the command runs on, once CUDA's start-up has finished.
conv::backend device_after(const cli_options& o, cuda_startup& init, stage_timer& timer, std::ostream& err) {
  init.wait();
  const conv::backend device = resolve_device(o.settings.device, o.quiet, err);
  if (init.started()) timer.mark("cuda-wait", init.note());
  return device;
}

// The stack's plan on the device asked for, made and run: run(plan) executes it. The plan's
// invalid_argument becomes a usage error naming the files.
template <typename F>
void with_plan(const cli_options& o, const kernel& k, long long d, long long h, long long w, cuda_startup& init,
               stage_timer& timer, std::ostream& err, F&& run) {
  conv::plan_options p;
  p.semantics = o.settings.semantics;
  p.device = device_after(o, init, timer, err);
  p.threads = o.settings.threads;
  try {
    conv::plan3d plan(d, h, w, 1, k.values.data(), k.depth, k.height, k.width, p);
    timer.mark("plan", device_note(p));
    run(plan);
    timer.mark("convolve", device_note(p) + std::string(p.device == conv::backend::cuda ? ", upload and download included" : ""));
  } catch (const std::invalid_argument& e) {
    throw named(o, e);
  }
}

// The narrow route (narrow_route): the stored samples through the plan, written as they come back.
int stack_convolve_narrow(const cli_options& o, const kernel& k, const stored_volume& in, cuda_startup& init,
                          stage_timer& timer, std::ostream& err) {
  stored_volume out;
  with_plan(o, k, in.depth, in.height, in.width, init, timer, err, [&](conv::plan3d& plan) {
    out.depth = plan.output_depth();
    out.height = plan.output_height();
    out.width = plan.output_width();
    out.cv_depth = in.cv_depth;
    out.bytes.resize(std::size_t(out.voxels()) * CV_ELEM_SIZE(in.cv_depth));
    if (in.cv_depth == CV_8U) plan.execute(in.bytes.data(), out.bytes.data());
    else
      plan.execute(reinterpret_cast<const std::uint16_t*>(in.bytes.data()), reinterpret_cast<std::uint16_t*>(out.bytes.data()));
  });
  if (interrupted()) return interrupt_exit_code();
  write_stack_stored(o.output, out);
  timer.mark("write", "encode, write and sync");
  if (interrupted()) return interrupt_exit_code();
  timer.print(err);
  return exit_ok;
}

}  // namespace

int run_stack_convolve(const cli_options& given, stage_timer& timer, std::ostream& err) {
  check_stack_paths(given);
  cli_options o = given;
  cuda_startup init;
  start_cuda(o, init);
  kernel k = resolve_volume_kernel(o.kernel);
  if (o.normalize) normalize(k);
  timer.mark("kernel", k.source);
  choose_stack_device(o, k, 1, init, timer);
  volume in;
  {
    stored_volume raw = read_stack_stored(o.input, "input '" + o.input + "'");
    const std::string shape = shape_text(raw.width, raw.height, raw.depth);
    if (narrow_route(o, k, raw.cv_depth)) {
      timer.mark("read", shape + ", " + std::to_string(CV_ELEM_SIZE(raw.cv_depth) * 8) + "-bit samples kept");
      return stack_convolve_narrow(o, k, raw, init, timer, err);
    }
    in = to_float(raw);
    timer.mark("read", shape + ", as float");
  }
  volume out;
  with_plan(o, k, in.depth, in.height, in.width, init, timer, err, [&](conv::plan3d& plan) {
    out.depth = plan.output_depth();
    out.height = plan.output_height();
    out.width = plan.output_width();
    out.values.resize(std::size_t(out.voxels()));
    plan.execute(in.values.data(), out.values.data());
  });
  return finish(o, out, in.cv_depth, o.settings.scale, o.settings.offset, timer, err);
}

int run_deconvolve(const cli_options& given, std::ostream& err) {
  stage_timer timer(given.timing);
  check_stack_paths(given);
  cli_options o = given;
  cuda_startup init;
  start_cuda(o, init);
  kernel k = resolve_volume_kernel(o.kernel);
  long long negative = 0;
  for (float& v : k.values)
    if (v < 0) {
      v = 0;
      ++negative;
    }
  if (negative && !o.quiet) err << "gpuconv: " << k.source << ": " << negative << " negative values set to 0\n";
  if (!(k.sum() > 0)) throw input_error(k.source + ": no positive value; a PSF must sum to more than 0");
  timer.mark("kernel", k.source);
  // an iteration: two convolutions (the estimate of the plan's one, the PSF as given)
  choose_stack_device(o, k, 2 * std::max(1, o.deconvolve.iterations), init, timer);
  const volume in = read_stack(o.input, "input '" + o.input + "'");
  timer.mark("read", shape_text(in.width, in.height, in.depth) + ", as float");
  conv::deconvolve_options d;
  d.iterations = o.deconvolve.iterations;
  d.tv_lambda = float(o.deconvolve.tv);
  d.epsilon = float(o.deconvolve.epsilon);
  d.border = o.settings.semantics.border;
  d.constant_value = o.settings.semantics.constant_value;
  d.device = device_after(o, init, timer, err);
  d.threads = o.settings.threads;
  if (o.settings.semantics.mode != conv::output_mode::same || o.settings.semantics.op != conv::operation::convolution)
    throw usage_error("deconvolve: the output has the stack's size (no --mode, --correlate)");
  volume out;  // the same shape; its values are set by the run (uninit_vector: no copy, no fill)
  out.depth = in.depth;
  out.height = in.height;
  out.width = in.width;
  out.cv_depth = in.cv_depth;
  out.values.resize(in.values.size());
  const bool progress = !o.quiet && ::isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  try {
    conv::richardson_lucy rl(in.depth, in.height, in.width, k.values.data(), k.depth, k.height, k.width, d);
    timer.mark("plan", d.device == conv::backend::cuda ? "CUDA" : "CPU");
    rl.run(in.values.data(), out.values.data(), [&](int done, int total) {
      if (progress) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::ostringstream line;
        line.precision(1);
        line << std::fixed << "\rgpuconv: deconvolve " << shape_text(in.width, in.height, in.depth) << ": iteration "
             << done << "/" << total << ", " << s << " s" << (done == total ? "\n" : "");
        err << line.str() << std::flush;
      }
      return !interrupted();
    });
    timer.mark("deconvolve", std::to_string(d.iterations) + " iterations" +
                                 std::string(d.device == conv::backend::cuda ? ", upload and download included" : ""));
  } catch (const std::invalid_argument& e) {
    throw named(o, e);
  }
  if (progress && interrupted()) err << "\n";
  return finish(o, out, in.cv_depth, 1, 0, timer, err);
}

}  // namespace gpuconv::app
