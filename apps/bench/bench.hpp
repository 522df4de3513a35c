// gpuconv-bench: subcommands and their shared options.
#pragma once
#include <string>
#include <vector>

namespace gpuconv::bench {

struct options {
  long long points = 1LL << 28;
  int reps = 20;
  int warmup = 3;
  std::vector<int> sizes;  // empty: all
  std::string csv;
  int tile = 0;  // conv: force this square tile (plan_options::tile; 0: the cost model)
  int iterations = 50;  // deconvolve: Richardson-Lucy iterations per run
  std::string dump;     // deconvolve: a directory for the data and our result (scripts/rl_cupy.py)
  std::string psf = "gaussian";  // deconvolve: gaussian (rank-1) or general (rank-2: core and halo)
  bool passes = false;  // fft3d: time each pass of the forward transform alone too
  std::vector<std::string> shapes;  // sweep: PLANESxHEIGHTxWIDTH image shapes (empty: the four defaults)
  std::string boundary = "reflect101";  // sweep: zero, constant, replicate, reflect, reflect101 or wrap
  bool u8 = false;                       // sweep: uint8 images in and out (kernels scaled to sum |k| = 1)
  std::string input;                     // replay: a sweep's CSV
  int sms = 132;                         // replay: the GPU's multiprocessors (H100, H200: 132)
  bool rows = false;                     // replay: a line a row too
};

// K^3 PSFs of the volume benchmarks (conv3d.cu): random positive values summing to ~0.5
// (general: the FFT tiles), and gaussian3d with sigma (K - 1) / 8 (rank-1: the separable method).
std::vector<float> make_psf3d(int k);
std::vector<float> make_gaussian_psf3d(int k);

int run_fft1d(const options& opt);
int run_conv(const options& opt);
int run_sweep(const options& opt);
// gpuconv-bench replay: the cost model over a sweep CSV (no GPU needed)
int run_replay(const options& opt);
int run_host(const options& opt);
int run_host3d(const options& opt);
int run_fft3d(const options& opt);
int run_conv3d(const options& opt);
int run_deconvolve(const options& opt);

}  // namespace gpuconv::bench
