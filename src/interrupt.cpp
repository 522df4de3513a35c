#include "interrupt.hpp"

#include <csignal>

namespace gpuconv::app {

namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void on_signal(int signal) { received = signal; }

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: blocking reads return early
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // A file-size limit (RLIMIT_FSIZE) must give EFBIG from write(2), which the atomic writer
  // reports and cleans up after, not kill the process with a temp file left behind.
  std::signal(SIGXFSZ, SIG_IGN);
}

bool interrupted() { return received != 0; }
int interrupt_signal() { return received; }
int interrupt_exit_code() { return received ? 128 + received : 0; }
void reset_interrupt_for_testing() { received = 0; }

}  // namespace gpuconv::app
