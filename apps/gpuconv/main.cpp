// gpuconv: the command-line tool. Parsing and the commands live in the app layer (src/);
// this main only installs the interrupt handlers and turns every exception into one line
// on stderr and an exit code (README "Errors and exit codes").
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "errors.hpp"
#include "image_io.hpp"
#include "interrupt.hpp"

int main(int argc, char** argv) {
  namespace app = gpuconv::app;
  app::main_started = std::chrono::steady_clock::now();  // for batch --timing
  try {
    app::install_interrupt_handlers();
    app::capture_decoder_messages();  // libpng/libjpeg chatter goes into our one-line errors
    cv::setNumThreads(0);  // OpenCV's own threads would compete with ours; our threads are the parallelism
    const app::cli_options o = app::parse_cli(std::vector<std::string>(argv + 1, argv + argc));
    const bool quick_exit = o.cmd == app::command::convolve || o.cmd == app::command::batch ||
                            o.cmd == app::command::bench || o.cmd == app::command::deconvolve;
    app::process_ends_after_command = quick_exit;
    const int rc = app::run_command(o, std::cout, std::cerr);
    if (quick_exit) {
      // Every output is written, synced and renamed by now. Tearing down the CUDA context and
      // its allocations (tens of ms) is left to the operating system, as for any exit. (bench:
      // one run on the H100 ended in an abort after its last line, in static teardown; not
      // diagnosed: that binary also held a half-committed CPU backend.)
      std::cout.flush();
      std::cerr.flush();
      std::_Exit(rc);
    }
    return rc;
  } catch (const app::error& e) {
    std::cerr << "gpuconv: error: " << app::printable(e.what()) << "\n";
    return e.code();
  } catch (const std::invalid_argument& e) {  // the convolution layer's validation, e.g. 'valid' with a large kernel
    std::cerr << "gpuconv: error: " << app::printable(e.what()) << "\n";
    return app::exit_usage;
  } catch (const cv::Exception& e) {
    std::cerr << "gpuconv: error: OpenCV: " << app::printable(e.err) << "\n";
    return app::exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "gpuconv: error: " << app::printable(e.what()) << "\n";
    return app::exit_failure;
  } catch (...) {
    std::cerr << "gpuconv: error: unknown exception\n";
    return app::exit_failure;
  }
}
