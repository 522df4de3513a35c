// CUDA's start-up for one command (the driver's cuInit, the primary context with blocking
// sync, and optional extra set-up such as nvJPEG's handles) on a thread of its own, while the
// command reads its inputs: on the H100 host the driver and context take 0.15-0.3 s, about as
// long as reading and decoding a 12 MP photo or a 67 MB TIFF stack.
#pragma once
#include <exception>
#include <functional>
#include <string>
#include <thread>

namespace gpuconv::app {

// What CUDA costs a one-shot command beyond what its reads hide - the start-up's wait, the
// plan's set-up and the context's teardown at exit - on the H100 host (0.16-0.32 s): the
// --device auto rules (cpu_before_cuda_starts, the stack commands' choose_stack_device) weigh
// the CPU backend's expected time against it.
constexpr double cuda_command_overhead_s = 0.25;

class cuda_startup {
 public:
  cuda_startup() = default;
  cuda_startup(const cuda_startup&) = delete;
  cuda_startup& operator=(const cuda_startup&) = delete;
  ~cuda_startup();

  // Sets the driver's start-up environment for one command (a value the user has set stays):
  // one hardware work queue (one stream's work: the default 8 made the context 50 ms slower to
  // create and 30 ms slower to tear down at exit on the H100), no preloading of the JIT
  // compiler's libraries; then starts the thread. extra(have_device) runs on it after the
  // context, when a device is present.
  void start(std::function<void(bool)> extra = {});
  // Joins the thread (once) and rethrows its exception; nothing when it was not started.
  void wait();
  bool started() const { return started_; }
  // "start-up S s on its own thread (driver D s, context C s)", after wait().
  std::string note() const;

 private:
  std::thread thread_;
  std::exception_ptr error_;
  bool started_ = false;
  double seconds_ = 0, driver_ = 0, context_ = 0;
};

}  // namespace gpuconv::app
