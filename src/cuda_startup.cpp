#include "cuda_startup.hpp"

#include <chrono>
#include <cstdlib>

#include "fft/device/cuda_check.hpp"
#include "gpu_convolver.hpp"

namespace gpuconv::app {

namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
std::string seconds_text(double s) { return std::to_string(s).substr(0, 6) + " s"; }
}  // namespace

cuda_startup::~cuda_startup() {
  if (thread_.joinable()) thread_.join();
}

void cuda_startup::start(std::function<void(bool)> extra) {
  ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 0);
  ::setenv("CUDA_FORCE_PRELOAD_LIBRARIES", "0", 0);
  started_ = true;
  thread_ = std::thread([this, extra = std::move(extra)] {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const bool have_device = cuda_device_available();  // the driver's start (cuInit)
      driver_ = since(t0);
      if (have_device) pipeline::gpu_convolver::warm_up();  // the primary context
      context_ = since(t0) - driver_;
      if (have_device && extra) extra(true);
    } catch (...) {
      error_ = std::current_exception();
    }
    seconds_ = since(t0);
  });
}

void cuda_startup::wait() {
  if (thread_.joinable()) thread_.join();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

std::string cuda_startup::note() const {
  return "start-up " + seconds_text(seconds_) + " on its own thread (driver " + seconds_text(driver_) + ", context " +
         seconds_text(context_) + ")";
}

}  // namespace gpuconv::app
