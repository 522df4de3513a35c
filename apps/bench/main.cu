// gpuconv-bench: thin main. `gpuconv-bench fft1d|conv [options]` (see usage()).
#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>

#include "bench.hpp"
#include "conv/boundary_name.hpp"
#include "fft/device/cuda_check.hpp"

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: gpuconv-bench fft1d [--points P] [--reps R] [--warmup W] [--sizes n1,n2,...] [--csv FILE]\n"
               "       gpuconv-bench conv [--reps R] [--warmup W] [--sizes k1,k2,...] [--tile T] [--csv FILE]\n"
               "       gpuconv-bench host [--reps R] [--warmup W] [--csv FILE]\n"
               "       gpuconv-bench host3d [--reps R] [--warmup W] [--csv FILE]\n"
               "       gpuconv-bench sweep [--reps R] [--warmup W] [--sizes k1,k2,...] [--shapes PxHxW,...] [--tile T] [--boundary B] [--u8] [--csv FILE]\n"
               "       gpuconv-bench replay FILE.csv [--boundary B] [--tile T] [--sms N] [--rows]\n"
               "       gpuconv-bench fft3d [--reps R] [--warmup W] [--sizes 128,256,512,1024] [--passes] [--csv FILE]\n"
               "       gpuconv-bench conv3d [--reps R] [--warmup W] [--sizes 15,31,63,1024] [--tile T] [--csv FILE]\n"
               "       gpuconv-bench deconvolve [--iterations N] [--psf gaussian|general] [--reps R] [--warmup W] [--csv FILE] [--dump DIR]\n"
               "  fft1d  batched 1D R2C/C2R, n = 4..4096, against cuFFT (P points per transform, default 2^28)\n"
               "  conv   'same' convolution of 1x4096^2, 64x256^2, 1024x64^2 images, K = 3..127 (and 1000x28^2,\n"
               "         256x100^2 for K <= 15), against the cuFFT pipeline (pad, R2C, multiply, C2R, crop), the\n"
               "         plan's automatic method (direct, separable or an FFT path); --sizes k1,k2,... measures those\n"
               "         kernel sizes instead (any K >= 1); --tile forces a square tile (the cost model still picks\n"
               "         the path that holds it)\n"
               "  host   plan::execute on host buffers (pageable and page-locked) against the PCIe floor\n"
               "  host3d plan3d::execute on host buffers likewise (128x512x512 with 31^3 PSFs, 64x256x256 with 15^3)\n"
               "  sweep  every CUDA method (direct, separable, fused, three-pass, multi-pass) and the automatic\n"
               "         choice, K = 1..255 (--sizes selects), dense and rank-1 kernels, on 1x4096^2, 64x256^2,\n"
               "         1024x64^2 and 3x3000x4000 (12 MP RGB planes; --shapes selects, e.g. 64x256x256): the crossover\n"
               "         table; rank-1 kernels also time the separable passes by FMA and by FFT each; --tile forces the\n"
               "         fused and three-pass paths' tile (the automatic choice stays free); --boundary B sets the rule\n"
               "         (zero, constant, replicate, reflect, reflect101 (the default), wrap); --u8: uint8 images in\n"
               "         and out (kernels scaled to sum |k| = 1; plans made with plan_options::pixels = uint8, whose\n"
               "         model prices are fp32's; err in levels)\n"
               "  replay the cost model (conv/method.hpp) over a sweep's CSV, without a GPU: the choice it makes now\n"
               "         for every row, that choice's measured time over the fastest method's, and each method's\n"
               "         measured time over its price (median and spread, by shape; rank-1 rows of a sweep that forced\n"
               "         the separable passes each way: the FMA and the FFT passes each over its own price too);\n"
               "         --boundary and --tile: what the sweep ran with (the CSV does not say), --sms: its GPU's\n"
               "         multiprocessors, --rows: a line a row (the model's method, and its tile on the FFT paths);\n"
               "         uint8 rows priced as a uint8 plan chooses (the model's prices are fp32's)\n"
               "  fft3d  3D R2C/C2R of 128^3, 256^3, 512^3 and 256x1024x1024 (1024) against cuFFT 3D\n"
               "         (--passes: also each pass of the forward transform alone, the strided ones in several shapes)\n"
               "  conv3d 'same' volume convolution of 128x512x512 with K^3 PSFs against a cuFFT 3D pipeline,\n"
               "         then 256x1024x1024 with 31^3 through host buffers in bands (1024 in --sizes, or no --sizes)\n"
               "  deconvolve  Richardson-Lucy on 128x512x512 with a 31^3 PSF, N (50) iterations per run (at most 5\n"
               "         runs); --psf gaussian (rank-1, the default) or general (a core and a halo, rank 2: the FFT\n"
               "         tiles); --dump DIR writes the data and our result for scripts/rl_cupy.py (the CuPy peer)\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpuconv::bench;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  options opt;
  try {
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--points") opt.points = std::stoll(value());
      else if (a == "--reps") opt.reps = std::stoi(value());
      else if (a == "--warmup") opt.warmup = std::stoi(value());
      else if (a == "--csv") opt.csv = value();
      else if (a == "--tile") opt.tile = std::stoi(value());
      else if (a == "--iterations") opt.iterations = std::stoi(value());
      else if (a == "--dump") opt.dump = value();
      else if (a == "--psf") opt.psf = value();
      else if (a == "--passes") opt.passes = true;
      else if (a == "--boundary") opt.boundary = value();
      else if (a == "--sms") opt.sms = std::stoi(value());
      else if (a == "--rows") opt.rows = true;
      else if (a == "--u8") opt.u8 = true;
      else if (cmd == "replay" && a.rfind("--", 0) != 0 && opt.input.empty()) opt.input = a;
      else if (a == "--shapes") {
        std::stringstream ss(value());
        for (std::string s; std::getline(ss, s, ',');) opt.shapes.push_back(s);
      } else if (a == "--sizes") {
        std::stringstream ss(value());
        for (std::string s; std::getline(ss, s, ',');) opt.sizes.push_back(std::stoi(s));
      } else throw std::invalid_argument("unknown option " + a);
    }
    if (opt.points < 4096 || (opt.points & (opt.points - 1)))
      throw std::invalid_argument("--points must be a power of two >= 4096");
    if (opt.reps < 1 || opt.warmup < 0) throw std::invalid_argument("--reps must be >= 1 and --warmup >= 0");
    if (opt.tile < 0) throw std::invalid_argument("--tile must be >= 0");
    if (opt.iterations < 1) throw std::invalid_argument("--iterations must be >= 1");
    if (!gpuconv::conv::boundary_named(opt.boundary))
      throw std::invalid_argument("--boundary '" + opt.boundary +
                                  "' is not zero, constant, replicate, reflect, reflect101 or wrap");
    if (opt.psf != "gaussian" && opt.psf != "general")
      throw std::invalid_argument("--psf '" + opt.psf + "' is not gaussian or general");
    if (cmd == "replay") {
      if (opt.input.empty()) throw std::invalid_argument("replay needs a sweep's CSV file");
      if (opt.sms < 1) throw std::invalid_argument("--sms must be >= 1");
      return run_replay(opt);
    }
    if (!gpuconv::cuda_device_available()) {
      std::fprintf(stderr, "gpuconv-bench: no CUDA device present\n");
      return 1;
    }
    if (cmd == "fft1d") return run_fft1d(opt);
    if (cmd == "conv") return run_conv(opt);
    if (cmd == "host") return run_host(opt);
    if (cmd == "host3d") return run_host3d(opt);
    if (cmd == "sweep") return run_sweep(opt);
    if (cmd == "fft3d") return run_fft3d(opt);
    if (cmd == "conv3d") return run_conv3d(opt);
    if (cmd == "deconvolve") return run_deconvolve(opt);
    usage();
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuconv-bench: %s\n", e.what());
    return 1;
  }
}
