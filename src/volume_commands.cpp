// The stack commands: `gpuconv STACK KERNEL OUT` on a multi-page TIFF (3D convolution through
// conv::plan3d) and `gpuconv deconvolve` (Richardson-Lucy, conv::richardson_lucy). Both read
// the stack as float voxels in stored units, run on the CPU or CUDA backend, and write a
// multi-page TIFF atomically (stack_io.hpp).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "commands.hpp"
#include "conv/deconvolve.hpp"
#include "conv/plan3d.hpp"
#include "errors.hpp"
#include "interrupt.hpp"
#include "kernel_io.hpp"
#include "stack_io.hpp"

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
int finish(const cli_options& o, const volume& result, int input_depth, double scale, double offset, std::ostream& err) {
  if (interrupted()) return interrupt_exit_code();
  const long long clipped = write_stack(o.output, result, output_cv_depth(o.settings.depth, input_depth), scale, offset);
  if (interrupted()) return interrupt_exit_code();
  if (clipped && !o.quiet) err << "gpuconv: " << clipped << " voxels clipped\n";
  return exit_ok;
}

}  // namespace

int run_stack_convolve(const cli_options& o, std::ostream& err) {
  check_stack_paths(o);
  kernel k = resolve_volume_kernel(o.kernel);
  if (o.normalize) normalize(k);
  const volume in = read_stack(o.input, "input '" + o.input + "'");
  conv::plan_options p;
  p.semantics = o.settings.semantics;
  p.device = resolve_device(o.settings.device, o.quiet, err);
  p.threads = o.settings.threads;
  volume out;
  try {
    conv::plan3d plan(in.depth, in.height, in.width, 1, k.values.data(), k.depth, k.height, k.width, p);
    out.depth = plan.output_depth();
    out.height = plan.output_height();
    out.width = plan.output_width();
    out.values.resize(std::size_t(out.voxels()));
    plan.execute(in.values.data(), out.values.data());
  } catch (const std::invalid_argument& e) {
    throw named(o, e);
  }
  return finish(o, out, in.cv_depth, o.settings.scale, o.settings.offset, err);
}

int run_deconvolve(const cli_options& o, std::ostream& err) {
  check_stack_paths(o);
  kernel k = resolve_volume_kernel(o.kernel);
  long long negative = 0;
  for (float& v : k.values)
    if (v < 0) {
      v = 0;
      ++negative;
    }
  if (negative && !o.quiet) err << "gpuconv: " << k.source << ": " << negative << " negative values set to 0\n";
  if (!(k.sum() > 0)) throw input_error(k.source + ": no positive value; a PSF must sum to more than 0");
  const volume in = read_stack(o.input, "input '" + o.input + "'");
  conv::deconvolve_options d;
  d.iterations = o.deconvolve.iterations;
  d.tv_lambda = float(o.deconvolve.tv);
  d.epsilon = float(o.deconvolve.epsilon);
  d.border = o.settings.semantics.border;
  d.constant_value = o.settings.semantics.constant_value;
  d.device = resolve_device(o.settings.device, o.quiet, err);
  d.threads = o.settings.threads;
  if (o.settings.semantics.mode != conv::output_mode::same || o.settings.semantics.op != conv::operation::convolution)
    throw usage_error("deconvolve: the output has the stack's size (no --mode, --correlate)");
  volume out = in;
  const bool progress = !o.quiet && ::isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  try {
    conv::richardson_lucy rl(in.depth, in.height, in.width, k.values.data(), k.depth, k.height, k.width, d);
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
  } catch (const std::invalid_argument& e) {
    throw named(o, e);
  }
  if (progress && interrupted()) err << "\n";
  return finish(o, out, in.cv_depth, 1, 0, err);
}

}  // namespace gpuconv::app
