#include "commands.hpp"

#include <unistd.h>

#include <filesystem>
#include <optional>
#include <stdexcept>

#include "atomic_write.hpp"
#include "batch.hpp"
#include "errors.hpp"
#include "image_io.hpp"
#include "interrupt.hpp"
#include "kernel_io.hpp"
#include "named_kernels.hpp"

namespace gpuconv::app {

namespace fs = std::filesystem;

kernel load_kernel(const cli_options& o) {
  kernel k = resolve_kernel(o.kernel);
  if (o.normalize) normalize(k);
  return k;
}

int run_convolve(const cli_options& o, std::ostream& err) {
  const fs::path in(o.input), out(o.output);
  std::error_code ec;
  if (in == out || (fs::exists(out, ec) && fs::equivalent(in, out, ec)) ||
      fs::weakly_canonical(in, ec) == fs::weakly_canonical(out, ec))
    throw usage_error("output '" + o.output + "' is the input file; refusing to overwrite it");
  kernel k = load_kernel(o);
  const cv::Mat image = read_image(in);
  check_output_format(out, output_cv_depth(o.settings.depth, image.depth()), image.channels());
  convolve_settings s = o.settings;
  s.device = resolve_device(s.device, o.quiet, err);
  convolver c(std::move(k), s);
  output_image result;
  try {
    result = convolve_image(image, c);
  } catch (const std::invalid_argument& e) {  // the convolution layer's checks: name the files
    throw usage_error("input '" + o.input + "' with kernel '" + o.kernel + "': " + e.what());
  }
  if (interrupted()) return interrupt_exit_code();
  write_output(out, result.image);
  if (interrupted()) return interrupt_exit_code();
  if (result.clipped && !o.quiet) err << "gpuconv: " << result.clipped << " pixels clipped\n";
  return exit_ok;
}

int run_batch_command(const cli_options& o, std::ostream& err) {
  std::optional<convolver> c;
  if (!o.batch.io_only) {
    kernel k = load_kernel(o);
    convolve_settings s = o.settings;
    s.device = resolve_device(s.device, o.quiet, err);
    c.emplace(std::move(k), s);
  }
  if (!o.batch.format.empty())
    check_output_format(fs::path("x" + o.batch.format), CV_8U, 3);  // the format exists at all
  const bool progress = !o.quiet && ::isatty(STDERR_FILENO);
  const batch_report r = run_batch(o.input, o.output, o.batch, c ? &*c : nullptr, o.quiet, progress, err);
  print_summary(r, o.quiet, err);
  return exit_code_for(r);
}

int run_command(const cli_options& o, std::ostream& out, std::ostream& err) {
  switch (o.cmd) {
    case command::print: out << o.text; return exit_ok;
    case command::kernels: out << named_kernels_help(); return exit_ok;
    case command::convolve: return run_convolve(o, err);
    case command::batch: return run_batch_command(o, err);
    case command::bench: return run_bench(o, out, err);
  }
  return exit_failure;
}

}  // namespace gpuconv::app
