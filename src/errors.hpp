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

// `text` safe for a terminal and for one line: valid UTF-8 is kept (file names in other
// scripts stay readable), control characters, DEL and bytes that are not UTF-8 become \xNN
// (a kernel file's binary bytes, a file name's raw bytes, never reach the terminal as such).
inline std::string printable(const std::string& text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
    if (ok && len == 2) ok = c >= 0xC2;                                          // no overlong forms
    if (ok && len == 3) ok = !(c == 0xE0 && s[i + 1] < 0xA0) && !(c == 0xED && s[i + 1] >= 0xA0);  // nor surrogates
    if (ok && len == 4) ok = !(c == 0xF0 && s[i + 1] < 0x90) && !(c == 0xF4 && s[i + 1] >= 0x90) && c <= 0xF4;
    if (ok && len == 1 && (c < 0x20 || c == 0x7F)) ok = false;
    if (ok) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  return out;
}

}  // namespace gpuconv::app
