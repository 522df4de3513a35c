// gpuconv._gpuconv: the nanobind binding of conv::plan, conv::plan3d and conv::richardson_lucy,
// and nothing more. Python sits on top (python/gpuconv): array types, streams, batching, the
// plan cache, SciPy/OpenCV drop-ins.
//
// What crosses here: host buffers as NumPy arrays (C-contiguous, float32/uint8/uint16, the
// GIL released while the plan runs), device buffers as raw pointers with a dtype name and a
// stream handle (the caller's cudaStream_t as an int), and a CUDA-event timer of
// execute_device for the benchmark's "Python overhead" column. C++ exceptions map by type:
// std::invalid_argument -> ValueError (nanobind's translation), gpuconv::cuda_error (a
// std::runtime_error) -> RuntimeError.
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "conv/boundary_name.hpp"
#include "conv/deconvolve.hpp"
#include "conv/plan.hpp"
#include "conv/plan3d.hpp"
#include "fft/device/cuda_check.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace gpuconv::python {

using conv::backend;

// Python-side names of the options, parsed here so that a bad one names itself.
conv::output_mode parse_mode(const std::string& s) {
  if (s == "same") return conv::output_mode::same;
  if (s == "full") return conv::output_mode::full;
  if (s == "valid") return conv::output_mode::valid;
  throw std::invalid_argument("gpuconv: mode '" + s + "' is not one of 'same', 'full', 'valid'");
}

conv::boundary parse_boundary(const std::string& s) {
  if (const auto b = conv::boundary_named(s)) return *b;
  throw std::invalid_argument("gpuconv: boundary '" + s +
                              "' is not one of 'zero', 'constant', 'replicate', 'reflect', 'reflect101', 'wrap'");
}

backend parse_backend(const std::string& s) {
  if (s == "auto") return backend::automatic;
  if (s == "cuda") return backend::cuda;
  if (s == "cpu") return backend::cpu;
  throw std::invalid_argument("gpuconv: device '" + s + "' is not one of 'auto', 'cuda', 'cpu'");
}

enum class dtype { f32, u8, u16 };

dtype parse_dtype(const std::string& s) {
  if (s == "float32") return dtype::f32;
  if (s == "uint8") return dtype::u8;
  if (s == "uint16") return dtype::u16;
  throw std::invalid_argument("gpuconv: dtype '" + s + "' is not one of float32, uint8, uint16");
}

const char* path_name(conv::cuda_path p) {
  switch (p) {
    case conv::cuda_path::fused: return "fused";
    case conv::cuda_path::three_pass: return "three_pass";
    case conv::cuda_path::multipass: return "multipass";
    case conv::cuda_path::direct: return "direct";
    case conv::cuda_path::separable: return "separable";
    case conv::cuda_path::automatic: break;
  }
  return "none";
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

dtype dtype_of(nb::dlpack::dtype t) {
  if (t == nb::dtype<float>()) return dtype::f32;
  if (t == nb::dtype<std::uint8_t>()) return dtype::u8;
  if (t == nb::dtype<std::uint16_t>()) return dtype::u16;
  throw nb::type_error("gpuconv: dtype is not float32, uint8 or uint16");
}

void check_size(const char* what, std::size_t got, long long want) {
  if (static_cast<long long>(got) != want)
    throw std::invalid_argument(std::string("gpuconv: ") + what + " holds " + std::to_string(got) +
                                " elements, the plan needs " + std::to_string(want));
}

// p.execute(in, out) / p.execute_device(in, out, stream) on buffers of dtype t: a plan or a plan3d.
template <typename Plan>
void execute_typed(Plan& p, const void* in, void* out, dtype t) {
  switch (t) {
    case dtype::f32: p.execute(static_cast<const float*>(in), static_cast<float*>(out)); break;
    case dtype::u8: p.execute(static_cast<const std::uint8_t*>(in), static_cast<std::uint8_t*>(out)); break;
    case dtype::u16: p.execute(static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(out)); break;
  }
}

using host_in = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using host_out = nb::ndarray<nb::c_contig, nb::device::cpu>;

// The dtype of host buffers (NumPy) that must hold in_count and out_count elements of one dtype.
dtype host_dtype(const host_in& in, const host_out& out, long long in_count, long long out_count) {
  if (in.dtype() != out.dtype()) throw nb::type_error("gpuconv: input and output dtypes differ");
  check_size("input", in.size(), in_count);
  check_size("output", out.size(), out_count);
  return dtype_of(in.dtype());
}

// Host buffers of in_count and out_count elements, one dtype; the GIL released.
template <typename Plan>
void execute_host(Plan& p, const host_in& in, const host_out& out, long long in_count, long long out_count) {
  const dtype t = host_dtype(in, out, in_count, out_count);
  nb::gil_scoped_release unlocked;
  execute_typed(p, in.data(), out.data(), t);
}

template <typename Plan>
void execute_device_typed(Plan& p, std::uintptr_t in, std::uintptr_t out, dtype t, cudaStream_t stream) {
  const void* src = reinterpret_cast<const void*>(in);
  void* dst = reinterpret_cast<void*>(out);
  switch (t) {
    case dtype::f32: p.execute_device(static_cast<const float*>(src), static_cast<float*>(dst), stream); break;
    case dtype::u8:
      p.execute_device(static_cast<const std::uint8_t*>(src), static_cast<std::uint8_t*>(dst), stream);
      break;
    case dtype::u16:
      p.execute_device(static_cast<const std::uint16_t*>(src), static_cast<std::uint16_t*>(dst), stream);
      break;
  }
}

conv::plan_options options_of(const std::string& mode, const std::string& boundary, bool correlate, float cval,
                              const std::string& device, int tile, int threads) {
  conv::plan_options o;
  o.semantics.op = correlate ? conv::operation::correlation : conv::operation::convolution;
  o.semantics.mode = parse_mode(mode);
  o.semantics.border = parse_boundary(boundary);
  o.semantics.constant_value = cval;
  o.device = parse_backend(device);
  o.tile = tile;
  o.threads = threads;
  return o;
}

// One conv::plan with what the binding checks buffers against.
class plan {
 public:
  using kernel_bank = nb::ndarray<const float, nb::ndim<3>, nb::c_contig, nb::device::cpu>;

  plan(long long height, long long width, int planes, kernel_bank kernels, const std::string& mode,
       const std::string& boundary, bool correlate, float cval, const std::string& device, int tile, int threads)
      : height_(height), width_(width), planes_(planes), plan_(make(height, width, planes, kernels, mode, boundary,
                                                                  correlate, cval, device, tile, threads)) {}

  // Host buffers: NumPy arrays of planes x H x W in and output_planes x oh x ow out.
  void execute(host_in in, host_out out) {
    execute_host(plan_, in, out, in_count(), out_count());
  }

  // Device buffers as addresses; asynchronous on `stream` (a cudaStream_t as an int, 0 =
  // the legacy default stream). The caller owns the buffers and their sizes.
  void execute_device(std::uintptr_t in, std::uintptr_t out, const std::string& type, std::uintptr_t stream) {
    const dtype t = parse_dtype(type);
    nb::gil_scoped_release unlocked;
    run_device(in, out, t, reinterpret_cast<cudaStream_t>(stream));
  }

  // For the benchmark: `iterations` calls of execute_device on `stream`, each between two
  // CUDA events, after `warmup` untimed calls; then `iterations` calls again without events,
  // timed on the host from the first call to the stream's completion. Returns the
  // milliseconds of each call by the events, and the host's milliseconds per call of the
  // second loop: the C++ floor that a Python loop of calls is compared with.
  std::pair<std::vector<float>, double> time_execute_device(std::uintptr_t in, std::uintptr_t out, const std::string& type,
                                         std::uintptr_t stream_handle, int iterations, int warmup) {
    if (iterations < 1) throw std::invalid_argument("gpuconv: iterations " + std::to_string(iterations) + " is < 1");
    const dtype t = parse_dtype(type);
    const auto stream = reinterpret_cast<cudaStream_t>(stream_handle);
    nb::gil_scoped_release unlocked;
    std::vector<cudaEvent_t> events(2 * iterations, nullptr);
    std::vector<float> ms(iterations);
    double wall_ms = 0;
    const auto destroy = [&events] {
      for (auto e : events)
        if (e) cudaEventDestroy(e);
    };
    try {
      for (auto& e : events) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
      for (int i = 0; i < warmup; ++i) run_device(in, out, t, stream);
      for (int i = 0; i < iterations; ++i) {
        check_cuda(cudaEventRecord(events[2 * i], stream), "cudaEventRecord");
        run_device(in, out, t, stream);
        check_cuda(cudaEventRecord(events[2 * i + 1], stream), "cudaEventRecord");
      }
      check_cuda(cudaEventSynchronize(events.back()), "cudaEventSynchronize");
      const auto start = std::chrono::steady_clock::now();  // the same calls without events
      for (int i = 0; i < iterations; ++i) run_device(in, out, t, stream);
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / iterations;
      for (int i = 0; i < iterations; ++i)
        check_cuda(cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]), "cudaEventElapsedTime");
    } catch (...) {
      destroy();
      throw;
    }
    destroy();
    return {ms, wall_ms};
  }

  // For scripts/numpy-peer.py: `iterations` calls of execute on host buffers back to back in
  // C++ (the GIL released once), after `warmup` untimed ones; the milliseconds of each call.
  // Against the same calls made one at a time from Python, it tells the call's own time from
  // what happens between calls.
  std::vector<double> time_execute_host(host_in in, host_out out, int iterations, int warmup) {
    if (iterations < 1) throw std::invalid_argument("gpuconv: iterations " + std::to_string(iterations) + " is < 1");
    const dtype t = host_dtype(in, out, in_count(), out_count());
    std::vector<double> ms(iterations);
    nb::gil_scoped_release unlocked;
    for (int i = 0; i < warmup; ++i) execute_typed(plan_, in.data(), out.data(), t);
    for (int i = 0; i < iterations; ++i) {
      const auto start = std::chrono::steady_clock::now();
      execute_typed(plan_, in.data(), out.data(), t);
      ms[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    return ms;
  }

  std::string selected_backend() const { return plan_.selected_backend() == backend::cuda ? "cuda" : "cpu"; }
  std::string path() const { return path_name(plan_.path()); }
  std::string method() const { return conv::to_string(plan_.method()); }
  long long output_planes() const { return plan_.output_planes(); }
  long long output_height() const { return plan_.output_height(); }
  long long output_width() const { return plan_.output_width(); }
  std::vector<int> tile() const { return {plan_.tiles().tile_h, plan_.tiles().tile_w}; }

 private:
  static conv::plan make(long long height, long long width, int planes, const kernel_bank& kernels,
                         const std::string& mode, const std::string& boundary, bool correlate, float cval,
                         const std::string& device, int tile, int threads) {
    const conv::plan_options o = options_of(mode, boundary, correlate, cval, device, tile, threads);
    const auto count = static_cast<int>(kernels.shape(0)), kh = static_cast<int>(kernels.shape(1)),
               kw = static_cast<int>(kernels.shape(2));
    if (count < 1 || kh < 1 || kw < 1)
      throw std::invalid_argument("gpuconv: kernel bank shape (" + std::to_string(count) + ", " + std::to_string(kh) +
                                  ", " + std::to_string(kw) + ") has an empty side");
    nb::gil_scoped_release unlocked;  // the CUDA backend's set-up takes milliseconds
    return conv::plan(height, width, planes, kernels.data(), count, kh, kw, o);
  }

  void run_device(std::uintptr_t in, std::uintptr_t out, dtype t, cudaStream_t stream) {
    execute_device_typed(plan_, in, out, t, stream);
  }
  // elements of the host buffers: planes x H x W in, output_planes x oh x ow out
  long long in_count() const { return planes_ * height_ * width_; }
  long long out_count() const { return output_planes() * output_height() * output_width(); }

  long long height_, width_, planes_;
  conv::plan plan_;
};

// One conv::plan3d: volumes x D x H x W with a kd x kh x kw PSF.
class plan3d {
 public:
  using psf_t = nb::ndarray<const float, nb::ndim<3>, nb::c_contig, nb::device::cpu>;

  plan3d(long long depth, long long height, long long width, int volumes, psf_t psf, const std::string& mode,
         const std::string& boundary, bool correlate, float cval, const std::string& device, int tile, int threads)
      : voxels_(depth * height * width * volumes),
        plan_(make(depth, height, width, volumes, psf, options_of(mode, boundary, correlate, cval, device, tile, threads))) {}

  void execute(host_in in, host_out out) { execute_host(plan_, in, out, voxels_, output_voxels()); }

  void execute_device(std::uintptr_t in, std::uintptr_t out, const std::string& type, std::uintptr_t stream) {
    const dtype t = parse_dtype(type);
    nb::gil_scoped_release unlocked;
    execute_device_typed(plan_, in, out, t, reinterpret_cast<cudaStream_t>(stream));
  }

  std::string selected_backend() const { return plan_.selected_backend() == backend::cuda ? "cuda" : "cpu"; }
  std::string path() const { return path_name(plan_.path()); }
  std::string method() const { return conv::to_string(plan_.method()); }
  std::vector<long long> output_shape() const { return {plan_.output_depth(), plan_.output_height(), plan_.output_width()}; }
  std::vector<int> tile() const {
    const auto t = plan_.tile();
    return {t.tile_d, t.tile_h, t.tile_w};
  }

 private:
  long long output_voxels() const {
    return plan_.output_depth() * plan_.output_height() * plan_.output_width() * plan_.volumes();
  }
  static conv::plan3d make(long long depth, long long height, long long width, int volumes, const psf_t& psf,
                           const conv::plan_options& o) {
    const auto kd = static_cast<int>(psf.shape(0)), kh = static_cast<int>(psf.shape(1)), kw = static_cast<int>(psf.shape(2));
    nb::gil_scoped_release unlocked;
    return conv::plan3d(depth, height, width, volumes, psf.data(), kd, kh, kw, o);
  }

  long long voxels_;
  conv::plan3d plan_;
};

// One conv::richardson_lucy (float32 stacks of D x H x W).
class deconvolver {
 public:
  deconvolver(long long depth, long long height, long long width, plan3d::psf_t psf, int iterations, float tv,
              float epsilon, const std::string& boundary, float cval, const std::string& device, int threads)
      : voxels_(depth * height * width), rl_(make(depth, height, width, psf, iterations, tv, epsilon, boundary, cval,
                                                   device, threads)) {}

  int run(nb::ndarray<const float, nb::c_contig, nb::device::cpu> observed,
          nb::ndarray<float, nb::c_contig, nb::device::cpu> estimate) {
    check_size("observed stack", observed.size(), voxels_);
    check_size("estimate", estimate.size(), voxels_);
    nb::gil_scoped_release unlocked;
    return rl_.run(observed.data(), estimate.data());
  }

  int run_device(std::uintptr_t observed, std::uintptr_t estimate, std::uintptr_t stream) {
    nb::gil_scoped_release unlocked;
    return rl_.run_device(reinterpret_cast<const float*>(observed), reinterpret_cast<float*>(estimate),
                          reinterpret_cast<cudaStream_t>(stream));
  }

  std::string selected_backend() const { return rl_.selected_backend() == backend::cuda ? "cuda" : "cpu"; }

 private:
  static conv::richardson_lucy make(long long depth, long long height, long long width, const plan3d::psf_t& psf,
                                    int iterations, float tv, float epsilon, const std::string& boundary, float cval,
                                    const std::string& device, int threads) {
    conv::deconvolve_options o;
    o.iterations = iterations;
    o.tv_lambda = tv;
    o.epsilon = epsilon;
    o.border = parse_boundary(boundary);
    o.constant_value = cval;
    o.device = parse_backend(device);
    o.threads = threads;
    const auto kd = static_cast<int>(psf.shape(0)), kh = static_cast<int>(psf.shape(1)), kw = static_cast<int>(psf.shape(2));
    nb::gil_scoped_release unlocked;
    return conv::richardson_lucy(depth, height, width, psf.data(), kd, kh, kw, o);
  }

  long long voxels_;
  conv::richardson_lucy rl_;
};

}  // namespace gpuconv::python

NB_MODULE(_gpuconv, m) {
  using gpuconv::python::plan;
  m.doc() = "gpuconv's C++ core: conv::plan bound with nanobind (use the gpuconv package on top)";

  nb::class_<plan>(m, "Plan", "A conv::plan: built once for a shape, kernel bank and options, executed many times")
      .def(nb::init<long long, long long, int, plan::kernel_bank, const std::string&, const std::string&, bool, float,
                    const std::string&, int, int>(),
           "height"_a, "width"_a, "planes"_a, "kernels"_a, "mode"_a = "same", "boundary"_a = "reflect101",
           "correlate"_a = false, "cval"_a = 0.f, "device"_a = "auto", "tile"_a = 0, "threads"_a = 0,
           "kernels: float32 (count, kh, kw), C-contiguous, on the host")
      .def("execute", &plan::execute, "input"_a, "output"_a,
           "Host buffers (NumPy, C-contiguous, same dtype: float32, uint8 or uint16); the GIL is released")
      .def("execute_device", &plan::execute_device, "input_ptr"_a, "output_ptr"_a, "dtype"_a, "stream"_a = 0,
           "Device addresses (CUDA backend); asynchronous on the stream handle")
      .def("time_execute_device", &plan::time_execute_device, "input_ptr"_a, "output_ptr"_a, "dtype"_a,
           "stream"_a = 0, "iterations"_a = 20, "warmup"_a = 3,
           "(milliseconds of each of `iterations` execute_device calls by CUDA events on the stream, host milliseconds per call of the loop)")
      .def("time_execute_host", &plan::time_execute_host, "input"_a, "output"_a, "iterations"_a = 9, "warmup"_a = 1,
           "(milliseconds of each of `iterations` execute calls on host buffers, back to back in C++)")
      .def_prop_ro("backend", &plan::selected_backend)
      .def_prop_ro("path", &plan::path)
      .def_prop_ro("method", &plan::method)
      .def_prop_ro("output_planes", &plan::output_planes)
      .def_prop_ro("output_height", &plan::output_height)
      .def_prop_ro("output_width", &plan::output_width)
      .def_prop_ro("tile", &plan::tile);

  using gpuconv::python::plan3d;
  nb::class_<plan3d>(m, "Plan3D", "A conv::plan3d: volumes convolved with a 3D PSF, built once, executed many times")
      .def(nb::init<long long, long long, long long, int, plan3d::psf_t, const std::string&, const std::string&, bool,
                    float, const std::string&, int, int>(),
           "depth"_a, "height"_a, "width"_a, "volumes"_a, "psf"_a, "mode"_a = "same", "boundary"_a = "reflect101",
           "correlate"_a = false, "cval"_a = 0.f, "device"_a = "auto", "tile"_a = 0, "threads"_a = 0,
           "psf: float32 (kd, kh, kw), C-contiguous, on the host")
      .def("execute", &plan3d::execute, "input"_a, "output"_a,
           "Host buffers (NumPy, C-contiguous, same dtype: float32, uint8 or uint16); the GIL is released")
      .def("execute_device", &plan3d::execute_device, "input_ptr"_a, "output_ptr"_a, "dtype"_a, "stream"_a = 0,
           "Device addresses (CUDA backend); asynchronous on the stream handle")
      .def_prop_ro("backend", &plan3d::selected_backend)
      .def_prop_ro("path", &plan3d::path)
      .def_prop_ro("method", &plan3d::method)
      .def_prop_ro("output_shape", &plan3d::output_shape)
      .def_prop_ro("tile", &plan3d::tile);

  using gpuconv::python::deconvolver;
  nb::class_<deconvolver>(m, "RichardsonLucy", "A conv::richardson_lucy: the PSF's plans built once, run on stacks")
      .def(nb::init<long long, long long, long long, plan3d::psf_t, int, float, float, const std::string&, float,
                    const std::string&, int>(),
           "depth"_a, "height"_a, "width"_a, "psf"_a, "iterations"_a = 10, "tv"_a = 0.f, "epsilon"_a = 1e-6f,
           "boundary"_a = "reflect", "cval"_a = 0.f, "device"_a = "auto", "threads"_a = 0)
      .def("run", &deconvolver::run, "observed"_a, "estimate"_a,
           "Host float32 stacks (NumPy, C-contiguous); returns the iterations done; the GIL is released")
      .def("run_device", &deconvolver::run_device, "observed_ptr"_a, "estimate_ptr"_a, "stream"_a = 0,
           "Device addresses of float32 stacks (CUDA backend); asynchronous on the stream handle")
      .def_prop_ro("backend", &deconvolver::selected_backend);

  m.def("cuda_device_count", &gpuconv::python::device_count,
        "Number of CUDA devices the runtime sees (0 without a driver or a GPU); never raises");
  m.def(
      "set_device",
      [](int device) { gpuconv::check_cuda(cudaSetDevice(device), "cudaSetDevice"); },
      "device"_a, "Makes `device` current for this thread in gpuconv's CUDA runtime");
  m.def(
      "get_device",
      [] {
        int d = 0;
        gpuconv::check_cuda(cudaGetDevice(&d), "cudaGetDevice");
        return d;
      },
      "The current device of this thread in gpuconv's CUDA runtime");
}
