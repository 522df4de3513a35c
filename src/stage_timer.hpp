// --timing's stage clock, shared by the single-image and stack commands.
#pragma once
#include <sys/resource.h>

#include <chrono>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace gpuconv::app {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// --timing: the stages of one image in the order they ran, printed on one block of stderr.
// The stages do not overlap: their sum is the total.
class stage_timer {
 public:
  explicit stage_timer(bool on) : on_(on), start_(clock_type::now()), last_(start_) {}
  // Ends the stage that began at the previous mark (less what add() reported since).
  void mark(const std::string& stage, const std::string& note = "") {
    const auto now = clock_type::now();
    if (on_) stages_.push_back({stage, std::chrono::duration<double>(now - last_).count() - added_, note});
    last_ = now;
    added_ = 0;
  }
  // A stage timed by someone else (convolver::stage_times) within the current one.
  void add(const std::string& stage, double seconds, const std::string& note = "") {
    if (on_) stages_.push_back({stage, seconds, note});
    added_ += seconds;
  }
  // `title` after "gpuconv: "; `total` (seconds, with its note) where it is not this timer's
  // time since it was made.
  void print(std::ostream& err, const std::string& title = "timing", double total = -1,
             const std::string& total_note = "this command, after process start-up") const {
    if (!on_) return;
    std::ostringstream s;
    s << "gpuconv: " << title << "\n" << std::fixed << std::setprecision(4);
    for (const auto& st : stages_)
      s << "  " << std::left << std::setw(10) << st.name << std::right << std::setw(9) << st.seconds << " s"
        << (st.note.empty() ? "" : "  (" + st.note + ")") << "\n";
    s << "  " << std::left << std::setw(10) << "total" << std::right << std::setw(9)
      << (total >= 0 ? total : seconds_since(start_)) << " s  (" << total_note << ")\n";
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    s << "  peak RSS  " << std::setw(9) << std::setprecision(1) << u.ru_maxrss / 1024.0 << " MiB\n";
    err << s.str();
  }

 private:
  struct stage {
    std::string name;
    double seconds;
    std::string note;
  };
  bool on_;
  clock_type::time_point start_, last_;
  double added_ = 0;
  std::vector<stage> stages_;
};

}  // namespace gpuconv::app
