// The commands behind the CLI: what main() runs once parse_cli has produced cli_options.
// Each returns the process exit code; errors are thrown as gpuconv::app::error (and
// std::invalid_argument from the convolution layer), which main() reports on one line.
#pragma once
#include <chrono>
#include <ostream>
#include <type_traits>
#include <utility>

#include "cli.hpp"

namespace gpuconv::app {

int run_command(const cli_options& o, std::ostream& out, std::ostream& err);

// Set by the CLI's main before run_command when the process ends right after it (std::_Exit):
// the one-image command then leaves its GPU buffers to the exit instead of freeing them. Off
// by default (a caller that goes on, such as the tests, gets everything freed).
extern bool process_ends_after_command;

// Hands `v` to the exit: moved to the heap and never destroyed, for a process that ends next
// (its GPU buffers go with the context at exit, sooner than freed one by one).
template <class T>
void leave_to_exit(T&& v) {
  (void)new std::decay_t<T>(std::move(v));
}

// When main began (set first thing by the CLI's main; else at static initialisation).
extern std::chrono::steady_clock::time_point main_started;
// Seconds from this process's start (the kernel's record in /proc/self/stat, in steps of 10 ms)
// to main_started; -1 where that is not known.
double seconds_to_main();

int run_convolve(const cli_options& o, std::ostream& err);
// Throws usage_error when OUTPUT names INPUT (the same path, a link to it, or the same file).
void refuse_output_over_input(const cli_options& o);
int run_batch_command(const cli_options& o, std::ostream& err);
int run_bench(const cli_options& o, std::ostream& out, std::ostream& err);  // bench_batch.cpp
// volume_commands.cpp: INPUT a multi-page TIFF (3D convolution; `timer`: run_convolve's --timing
// clock, stage_timer.hpp), and gpuconv deconvolve
class stage_timer;
int run_stack_convolve(const cli_options& o, stage_timer& timer, std::ostream& err);
int run_deconvolve(const cli_options& o, std::ostream& err);

// The kernel of the KERNEL argument, normalised when --normalize was given.
kernel load_kernel(const cli_options& o);

}  // namespace gpuconv::app
