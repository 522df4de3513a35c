// libFuzzer target: the command line (src/cli.cpp, parse_cli) given fuzzed argv, and the
// option handling around the kernel argument: the KERNEL spec through the named-kernel
// parser and --normalize. The input is split on NUL bytes into arguments. parse_cli must
// return cli_options or throw gpuconv::app::error; it must never exit, abort, print, or
// throw anything else. No file is touched: KERNEL is only tried as a named kernel.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.hpp"
#include "errors.hpp"
#include "named_kernels.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuconv::app;
  if (size > 1024) return 0;
  std::vector<std::string> args(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0)
      args.emplace_back();
    else
      args.back().push_back(char(data[i]));
  }
  if (size == 0) args.clear();
  cli_options o;
  try {
    o = parse_cli(args);
  } catch (const error& e) {
    if (e.code() != exit_usage) std::abort();
    return 0;
  }
  if ((o.cmd == command::print) == o.text.empty()) std::abort();
  if (!std::isfinite(o.settings.scale) || !std::isfinite(o.settings.offset)) std::abort();
  if (!std::isfinite(o.settings.semantics.constant_value)) std::abort();
  if (o.cmd == command::batch && (o.batch.jobs < 0 || o.batch.jobs > 1024)) std::abort();
  if (o.cmd == command::convolve || o.cmd == command::batch || o.cmd == command::bench) {
    try {
      if (auto k = make_named_kernel(o.kernel)) {
        if (o.normalize) normalize(*k);
        for (float v : k->values)
          if (!std::isfinite(v)) std::abort();
      }
    } catch (const error& e) {
      if (e.code() != exit_usage) std::abort();
    }
  }
  return 0;
}
