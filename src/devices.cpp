#include "devices.hpp"

#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "atomic_write.hpp"
#include "errors.hpp"
#include "interrupt.hpp"

extern char** environ;

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

constexpr const char* role_variable = "GPUCONV_DEVICE_WORKER";
constexpr const char* report_variable = "GPUCONV_DEVICE_REPORT";

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, sep);) parts.push_back(part);
  if (!text.empty() && text.back() == sep) parts.push_back("");
  return parts;
}

bool parse_ordinal(const std::string& s, int& v) {
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  v = std::stoi(s);
  return true;
}

// The worker's arguments: the parent's, less --summary and --devices (with their values),
// plus --quiet (the parent prints the one summary).
std::vector<std::string> worker_arguments(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  bool quiet = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--summary" || a == "--devices") {
      ++i;
      continue;
    }
    if (a.rfind("--summary=", 0) == 0 || a.rfind("--devices=", 0) == 0) continue;
    if (a == "-q" || a == "--quiet") quiet = true;
    out.push_back(a);
  }
  if (!quiet) out.push_back("--quiet");
  return out;
}

// This process's environment less the variables a worker gets its own value of (the role, the
// report file and, with `own_gpu`, CUDA_VISIBLE_DEVICES).
std::vector<std::string> worker_base_environment(bool own_gpu) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string v = *e;
    if ((own_gpu && v.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) || v.rfind(std::string(role_variable) + "=", 0) == 0 ||
        v.rfind(std::string(report_variable) + "=", 0) == 0)
      continue;
    env.push_back(v);
  }
  return env;
}

// This program started as `gpuconv ARGS` with the environment `env`; 0, or posix_spawn's error.
int spawn_self(const std::vector<std::string>& args, const std::vector<std::string>& env, pid_t& pid) {
  std::vector<char*> argv{const_cast<char*>("gpuconv")}, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& v : env) envp.push_back(const_cast<char*>(v.c_str()));
  envp.push_back(nullptr);
  return ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data());
}

// Waits for the children in `pids` (those > 0; each set to 0 as it ends, its waitpid status in
// `status`), passing an interrupt of this process on to them (they stop as one would).
void wait_for_children(std::vector<pid_t>& pids, std::vector<int>& status) {
  bool forwarded = false;
  for (int running = int(std::count_if(pids.begin(), pids.end(), [](pid_t p) { return p > 0; })); running > 0;) {
    for (std::size_t k = 0; k < pids.size(); ++k) {
      if (pids[k] <= 0) continue;
      const pid_t w = ::waitpid(pids[k], &status[k], WNOHANG);
      if (w == pids[k] || (w < 0 && errno != EINTR)) {
        pids[k] = 0;
        --running;
      }
    }
    if (interrupted() && !forwarded) {
      for (pid_t p : pids)
        if (p > 0) ::kill(p, interrupt_exit_code() == exit_sigint ? SIGINT : SIGTERM);
      forwarded = true;
    }
    if (running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::vector<std::string> device_workers(const std::string& spec, int visible, const char* visible_env) {
  std::vector<std::string> names;  // what the parent's ordinals are called in CUDA_VISIBLE_DEVICES
  if (visible_env && *visible_env) names = split(visible_env, ',');
  auto name_of = [&](int ordinal) {
    return ordinal < int(names.size()) ? names[ordinal] : std::to_string(ordinal);
  };
  std::vector<std::string> workers;
  if (spec == "all") {
    if (visible < 2) return workers;
    for (int i = 0; i < visible; ++i) workers.push_back(name_of(i));
    return workers;
  }
  const auto parts = split(spec, ',');
  if (parts.empty()) throw usage_error("--devices: empty (expected all, or GPU ordinals such as 0,2)");
  for (const std::string& part : parts) {
    int v = 0;
    if (!parse_ordinal(part, v))
      throw usage_error("--devices " + spec + ": '" + part + "' is not a GPU ordinal (expected all, or e.g. 0,2)");
    if (v >= visible)
      throw usage_error("--devices " + spec + ": GPU " + std::to_string(v) + " is not one of the " +
                        std::to_string(visible) + " visible (0.." + std::to_string(std::max(0, visible - 1)) + ")");
    workers.push_back(name_of(v));
  }
  return workers;
}

bool read_worker_role(batch_options& o) {
  const char* role = std::getenv(role_variable);
  if (!role || !*role) return false;
  const auto parts = split(role, '/');
  int k = 0, n = 0;
  if (parts.size() != 2 || !parse_ordinal(parts[0], k) || !parse_ordinal(parts[1], n) || n < 1 || k >= n)
    throw usage_error(std::string(role_variable) + "='" + role + "': expected K/N with 0 <= K < N");
  o.device_index = k;
  o.device_count = n;
  return true;
}

// Format: a header line, the counts, then each failure as "<file bytes> <reason bytes>\n"
// followed by the two strings and a newline (so that any byte may appear in them).
void write_worker_report(const batch_report& r) {
  const char* file = std::getenv(report_variable);
  if (!file || !*file) return;
  std::ostringstream s;
  s << "gpuconv-worker-report 2\n"
    << r.total << ' ' << r.done << ' ' << r.skipped << ' ' << r.failed << ' ' << r.not_processed << ' '
    << r.clipped_files << ' ' << r.clipped_pixels << ' ' << r.bytes_in << ' ' << r.bytes_out << ' '
    << (r.interrupted ? 1 : 0) << ' ' << r.seconds << ' ' << r.startup_seconds << ' ' << r.setup_seconds << ' '
    << r.after_seconds << ' ' << r.failures.size() << '\n';
  for (const auto& f : r.failures) s << f.file.size() << ' ' << f.reason.size() << '\n' << f.file << f.reason << '\n';
  s << "end\n";
  const std::string text = s.str();
  write_bytes_atomic(file, std::vector<unsigned char>(text.begin(), text.end()), true, true);
}

bool read_worker_report(const std::string& file, batch_report& r) {
  std::ifstream in(file, std::ios::binary);
  std::string header;
  if (!std::getline(in, header) || header != "gpuconv-worker-report 2") return false;
  int interrupted = 0;
  std::size_t failures = 0;
  if (!(in >> r.total >> r.done >> r.skipped >> r.failed >> r.not_processed >> r.clipped_files >> r.clipped_pixels >>
        r.bytes_in >> r.bytes_out >> interrupted >> r.seconds >> r.startup_seconds >> r.setup_seconds >> r.after_seconds >>
        failures))
    return false;
  r.interrupted = interrupted != 0;
  in.get();
  for (std::size_t i = 0; i < failures; ++i) {
    std::size_t a = 0, b = 0;
    if (!(in >> a >> b) || in.get() != '\n' || a > (1u << 20) || b > (1u << 20)) return false;
    batch_failure f;
    f.file.resize(a);
    f.reason.resize(b);
    if (!in.read(f.file.data(), std::streamsize(a)) || !in.read(f.reason.data(), std::streamsize(b)) || in.get() != '\n')
      return false;
    r.failures.push_back(std::move(f));
  }
  std::string end;
  return bool(in >> end) && end == "end";
}

batch_report run_batch_in_child(const std::vector<std::string>& args, double* command_seconds) {
  std::string dir_template = (fs::temp_directory_path() / "gpuconv-child.XXXXXX").string();
  if (!::mkdtemp(dir_template.data())) throw error("bench: cannot make a temporary directory", exit_failure);
  const fs::path dir = dir_template;
  const std::string report = (dir / "report").string();
  std::vector<std::string> env = worker_base_environment(false);
  env.push_back(std::string(role_variable) + "=0/1");
  env.push_back(std::string(report_variable) + "=" + report);
  std::error_code ec;
  std::vector<pid_t> pid{-1};
  std::vector<int> status{0};
  const auto start = std::chrono::steady_clock::now();
  if (const int rc = spawn_self(args, env, pid[0]); rc != 0) {
    fs::remove_all(dir, ec);
    throw error(std::string("bench: cannot start the batch process: ") + std::strerror(rc), exit_failure);
  }
  wait_for_children(pid, status);
  if (command_seconds) *command_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  batch_report r;
  const bool ok = read_worker_report(report, r);
  fs::remove_all(dir, ec);
  if (!ok && interrupted()) {  // stopped by the interrupt passed on: an interrupted run, not a failure
    r.interrupted = true;
    return r;
  }
  if (!ok) {
    const int code = WIFEXITED(status[0]) ? WEXITSTATUS(status[0]) : 128 + (WIFSIGNALED(status[0]) ? WTERMSIG(status[0]) : 0);
    throw error("bench: the batch process ended (exit code " + std::to_string(code) + ") without a report",
                exit_failure);
  }
  return r;
}

int run_batch_on_devices(const cli_options& o, const std::vector<std::string>& workers, std::ostream& err) {
  const auto start = std::chrono::steady_clock::now();
  const int n = int(workers.size());
  std::string dir_template = (fs::temp_directory_path() / "gpuconv-devices.XXXXXX").string();
  if (!::mkdtemp(dir_template.data())) throw error("--devices: cannot make a temporary directory", exit_failure);
  const fs::path dir = dir_template;

  const std::vector<std::string> args = worker_arguments(o.args);
  // the environment, less the variables each worker gets its own value of
  const std::vector<std::string> base_env = worker_base_environment(true);
  std::vector<pid_t> pids(n, -1);
  std::vector<int> status(n, 0);
  for (int k = 0; k < n; ++k) {
    std::vector<std::string> env = base_env;
    env.push_back("CUDA_VISIBLE_DEVICES=" + workers[k]);
    env.push_back(std::string(role_variable) + "=" + std::to_string(k) + "/" + std::to_string(n));
    env.push_back(std::string(report_variable) + "=" + (dir / ("worker-" + std::to_string(k))).string());
    const int rc = spawn_self(args, env, pids[k]);
    if (rc != 0) {
      pids[k] = -1;
      err << "gpuconv: --devices: cannot start the worker for GPU " << workers[k] << ": " << std::strerror(rc) << "\n";
    }
  }
  wait_for_children(pids, status);

  batch_report merged;
  for (int k = 0; k < n; ++k) {
    batch_report r;
    device_report d;
    d.gpu = workers[k];
    if (read_worker_report((dir / ("worker-" + std::to_string(k))).string(), r)) {
      merged.total += r.total;
      merged.done += r.done;
      merged.skipped += r.skipped;
      merged.failed += r.failed;
      merged.not_processed += r.not_processed;
      merged.clipped_files += r.clipped_files;
      merged.clipped_pixels += r.clipped_pixels;
      merged.bytes_in += r.bytes_in;
      merged.bytes_out += r.bytes_out;
      merged.interrupted = merged.interrupted || r.interrupted;
      for (auto& f : r.failures) merged.failures.push_back(std::move(f));
      d.done = r.done;
      d.skipped = r.skipped;
      d.failed = r.failed;
      d.seconds = r.seconds;
    } else {
      // the worker ended before its report (a crash, a kill): its share's files count as failed
      // (some outputs may be written: a rerun with --skip-existing finishes the share)
      batch_options share = o.batch;
      share.device_index = k;
      share.device_count = n;
      batch_report planned;
      std::vector<batch_item> items;
      try {
        items = plan_batch(o.input, o.output, share, planned);
      } catch (const std::exception&) {
      }
      const int code = WIFEXITED(status[k]) ? WEXITSTATUS(status[k]) : 128 + (WIFSIGNALED(status[k]) ? WTERMSIG(status[k]) : 0);
      const std::string why = "the worker for GPU " + workers[k] + " ended (exit code " + std::to_string(code) +
                              ") without a report";
      err << "gpuconv: --devices: " << why << ": its " << items.size() << " files count as failed\n";
      merged.total += planned.total;
      merged.skipped += planned.skipped;
      merged.failed += planned.failed + int(items.size());
      for (auto& f : planned.failures) merged.failures.push_back(std::move(f));
      for (const auto& it : items)
        merged.failures.push_back({it.input.string(), "input '" + it.input.string() + "': not done: " + why});
      d.failed = planned.failed + int(items.size());
    }
    merged.devices.push_back(d);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  std::sort(merged.failures.begin(), merged.failures.end(),
            [](const batch_failure& a, const batch_failure& b) { return a.file < b.file; });
  merged.interrupted = merged.interrupted || interrupted();
  merged.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_summary(merged, o.quiet, err);
  if (!o.batch.summary.empty()) {
    const std::string json = summary_json(merged, o.batch);
    write_bytes_atomic(o.batch.summary, std::vector<unsigned char>(json.begin(), json.end()), true, true);
  }
  return exit_code_for(merged);
}

}  // namespace gpuconv::app
