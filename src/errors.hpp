// Error types of the application layer and the process exit codes they map to.
// Library code throws; only apps/gpuconv/main.cpp turns an exception into a one-line message
// and an exit code (README "Errors and exit codes").
#pragma once
#include <stdexcept>
#include <string>

namespace gpuconv::app {

enum exit_code : int {
  exit_ok = 0,
  exit_failure = 1,      // processing failed at run time, or some batch files failed
  exit_usage = 2,        // bad option, option value or argument
  exit_input = 3,        // an input image or kernel cannot be read or is invalid
  exit_output = 4,       // an output cannot be written
  exit_sigint = 130,     // 128 + SIGINT
  exit_sigterm = 143,    // 128 + SIGTERM
};

class error : public std::runtime_error {
 public:
  error(const std::string& what, exit_code code) : std::runtime_error(what), code_(code) {}
  exit_code code() const { return code_; }

 private:
  exit_code code_;
};

struct usage_error : error {
  explicit usage_error(const std::string& what) : error(what, exit_usage) {}
};
struct input_error : error {
  explicit input_error(const std::string& what) : error(what, exit_input) {}
};
struct output_error : error {
  explicit output_error(const std::string& what) : error(what, exit_output) {}
};

}  // namespace gpuconv::app
