// --devices: a batch over several GPUs, one worker process per GPU. A worker is this program
// run again with the same arguments (less --summary and --devices, plus --quiet),
// CUDA_VISIBLE_DEVICES set to its GPU and GPUCONV_DEVICE_WORKER=k/N: it takes the k-th of N
// shares of its shard's files (cli.hpp: device_share_of), runs the whole single-GPU pipeline
// (its decoders, nvJPEG, streams and plans) on its GPU and leaves its report in a file
// (GPUCONV_DEVICE_REPORT). The parent waits (forwarding SIGINT/SIGTERM), merges the reports:
// one summary with per-GPU counts, one exit code. Processes rather than threads, because the
// CUDA runtime's current device and nvJPEG's handles belong to a process: each worker is the
// pipeline exactly as it runs on one GPU, and the decoders' CPU cores are split between them.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "batch.hpp"
#include "cli.hpp"

namespace gpuconv::app {

// The workers for --devices SPEC ("all" or ordinals "0,2", a GPU listed twice gets two
// workers) among `visible` GPUs: each worker's CUDA_VISIBLE_DEVICES value (the entry of
// `visible_env`, the parent's CUDA_VISIBLE_DEVICES, when set). Empty: run in this process
// ("all" with fewer than two GPUs). Throws usage_error naming a bad ordinal.
std::vector<std::string> device_workers(const std::string& spec, int visible, const char* visible_env);

// In a worker (GPUCONV_DEVICE_WORKER=k/N): sets o.device_index and o.device_count; false when
// this process is not a worker.
bool read_worker_role(batch_options& o);

// A worker's report for its parent, in the file GPUCONV_DEVICE_REPORT names (if set).
void write_worker_report(const batch_report& r);
// The parent's reading of it; false when the file is missing or incomplete.
bool read_worker_report(const std::string& file, batch_report& r);

// Runs the batch over the workers, prints the merged summary, writes --summary; the exit code.
int run_batch_on_devices(const cli_options& o, const std::vector<std::string>& workers, std::ostream& err);

// `gpuconv ARGS` (a batch command line, without the program name) run in a process of its own
// as the one worker of one share, and its report (its run_batch's own count and seconds). For
// `gpuconv bench`, whose GPU runs must each start as a user's command does: the CUDA context and
// nvJPEG's handle and decoder states are made once per process, so a second run in the bench's
// own process would start with them ready. An interrupt is passed on to the child. With
// `command_seconds`, also the whole command's time, from its start to its exit. Throws error
// when the child leaves no report.
batch_report run_batch_in_child(const std::vector<std::string>& args, double* command_seconds = nullptr);

}  // namespace gpuconv::app
