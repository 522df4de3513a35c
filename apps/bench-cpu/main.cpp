// gpuconv-bench-cpu: the CPU backend against OpenCV in the same run, the same thread count.
//
// Per case (shape x pixel type x K x kernel kind): one conv::plan built once (correlation,
// 'same', reflect101 = OpenCV's BORDER_DEFAULT, backend::cpu, `threads`), then `reps`
// interleaved rounds of { OpenCV, ours } after one warm-up of each, and the medians. OpenCV:
// cv::filter2D for a dense random kernel, cv::sepFilter2D for a separable one (a Gaussian,
// which our plan receives as the K x K outer product, as a user holding a 2D kernel would
// give it). The 12 MP RGB case is 3 x 3000 x 4000: OpenCV filters the interleaved 3-channel
// image, ours the three planes (the split is outside the timing). Results are compared:
// relative L2 for float, the largest difference in LSB for uint8 (both round half to even).
// A 20 ms pause precedes every timed call (time_ms), so each side starts on idle cores.
// Built only when OpenCV is found; gpuconv-bench itself does not link OpenCV.
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "conv/plan.hpp"

namespace {

using namespace gpuconv;
using clock_type = std::chrono::steady_clock;

struct settings {
  int threads = 2, reps = 5;
  std::vector<int> sizes{3, 7, 15, 31, 63, 127};
  std::vector<std::string> shapes{"4096", "rgb12mp"};
  std::vector<std::string> types{"f32", "u8"};
  std::vector<std::string> kinds{"dense", "separable"};
  std::string csv;
  conv::cpu_method method = conv::cpu_method::automatic;
  int tile = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Each timed call starts after a 20 ms pause: OpenCV's TBB workers keep spinning for a while
// after a parallel region, and without the pause our threads shared the 2 cores with them
// (12 MP uint8 separable K = 7: 48 ms right after sepFilter2D, 24 ms alone).
template <typename F>
double time_ms(F&& f) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto t0 = clock_type::now();
  f();
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// A normalised 1D Gaussian of K taps (sigma = K / 6, at least 0.5).
std::vector<float> gaussian(int K) {
  std::vector<float> g(K);
  const double sigma = std::max(0.5, K / 6.0), c = (K - 1) / 2.0;
  double s = 0;
  for (int i = 0; i < K; ++i) s += g[i] = float(std::exp(-0.5 * (i - c) * (i - c) / (sigma * sigma)));
  for (auto& v : g) v = float(v / s);
  return g;
}

struct result {
  double cv_ms, ours_ms, error;
  std::string method;
};

result run_case(const settings& s, int planes, int h, int w, bool u8, int K, bool separable) {
  const int depth = u8 ? CV_8U : CV_32F;
  std::mt19937 rng(12345u + K);
  // input: planes x h x w, values in [0, 255] (uint8) or [0, 1) (float)
  std::vector<cv::Mat> split(planes);
  for (auto& m : split) {
    m.create(h, w, depth);
    if (u8) cv::randu(m, 0, 256);
    else cv::randu(m, 0.f, 1.f);
  }
  cv::Mat interleaved;
  cv::merge(split, interleaved);
  // the kernel: dense random (sum 1, so that uint8 outputs stay in range mostly) or separable
  std::vector<float> g = gaussian(K), k2d((std::size_t)K * K);
  if (separable) {
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < K; ++j) k2d[(std::size_t)i * K + j] = g[i] * g[j];
  } else {
    std::uniform_real_distribution<float> d(-0.5f, 1.f);
    double sum = 0;
    for (auto& v : k2d) sum += v = d(rng);
    for (auto& v : k2d) v = float(v / sum);
  }
  const cv::Mat kmat(K, K, CV_32F, k2d.data()), gmat(K, 1, CV_32F, g.data());

  conv::plan_options po;
  po.device = conv::backend::cpu;
  po.threads = s.threads;
  po.cpu = s.method;
  po.tile = s.tile;
  po.semantics.op = conv::operation::correlation;
  po.semantics.mode = conv::output_mode::same;
  po.semantics.border = conv::boundary::reflect101;
  conv::plan p(h, w, planes, k2d.data(), K, K, po);

  const std::size_t plane = (std::size_t)h * w;
  std::vector<unsigned char> in_bytes(plane * planes * (u8 ? 1 : 4)), out_bytes(in_bytes.size());
  for (int c = 0; c < planes; ++c)
    std::memcpy(in_bytes.data() + c * plane * split[c].elemSize(), split[c].data, plane * split[c].elemSize());
  cv::Mat cv_out;
  auto run_cv = [&] {
    if (separable) cv::sepFilter2D(interleaved, cv_out, -1, gmat, gmat, cv::Point(-1, -1), 0, cv::BORDER_DEFAULT);
    else cv::filter2D(interleaved, cv_out, -1, kmat, cv::Point(-1, -1), 0, cv::BORDER_DEFAULT);
  };
  auto run_ours = [&] {
    if (u8) p.execute(in_bytes.data(), out_bytes.data());
    else p.execute(reinterpret_cast<const float*>(in_bytes.data()), reinterpret_cast<float*>(out_bytes.data()));
  };
  run_cv();
  run_ours();
  std::vector<double> tc, to;
  for (int r = 0; r < s.reps; ++r) {
    tc.push_back(time_ms(run_cv));
    to.push_back(time_ms(run_ours));
  }
  // compare: OpenCV's interleaved output against our planes
  std::vector<cv::Mat> cv_planes;
  cv::split(cv_out, cv_planes);
  double num = 0, den = 0, worst = 0;
  for (int c = 0; c < planes; ++c)
    for (std::size_t i = 0; i < plane; ++i) {
      double a, b;
      if (u8) {
        a = out_bytes[c * plane + i];
        b = cv_planes[c].data[i];
      } else {
        a = reinterpret_cast<const float*>(out_bytes.data())[c * plane + i];
        b = reinterpret_cast<const float*>(cv_planes[c].data)[i];
      }
      num += (a - b) * (a - b);
      den += b * b;
      worst = std::max(worst, std::abs(a - b));
    }
  std::string method = conv::to_string(p.method());
  if (p.method() == conv::cpu_method::fft)
    method += " " + std::to_string(p.tiles().tile_h) + "x" + std::to_string(p.tiles().tile_w);
  return {median(tc), median(to), u8 ? worst : std::sqrt(num / std::max(den, 1e-300)), method};
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) out.push_back(s);
  return out;
}

void usage() {
  std::fprintf(stderr,
               "usage: gpuconv-bench-cpu [--threads N] [--reps R] [--sizes k1,k2,...] [--shapes 4096,rgb12mp]\n"
               "                         [--types f32,u8] [--kinds dense,separable] [--method auto|direct|separable|fft]\n"
               "                         [--tile T] [--csv FILE]\n"
               "  'same' correlation, reflect101, of 1 x 4096^2 and 3 x 3000 x 4000 (12 MP RGB planes):\n"
               "  the CPU backend against cv::filter2D (dense kernels) and cv::sepFilter2D (separable),\n"
               "  cv::setNumThreads(N) and plan_options::threads = N (default 2), medians of R interleaved runs;\n"
               "  --method forces our CPU method (default: the cost model's choice), --tile the FFT's square tile\n");
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        usage();
        return 0;
      } else if (a == "--threads") s.threads = std::stoi(value());
      else if (a == "--reps") s.reps = std::stoi(value());
      else if (a == "--csv") s.csv = value();
      else if (a == "--tile") s.tile = std::stoi(value());
      else if (a == "--method") {
        const std::string m = value();
        if (m == "direct") s.method = conv::cpu_method::direct;
        else if (m == "separable") s.method = conv::cpu_method::separable;
        else if (m == "fft") s.method = conv::cpu_method::fft;
        else if (m != "auto") throw std::invalid_argument("unknown method " + m + " (auto, direct, separable, fft)");
      }
      else if (a == "--shapes") s.shapes = split_list(value());
      else if (a == "--types") s.types = split_list(value());
      else if (a == "--kinds") s.kinds = split_list(value());
      else if (a == "--sizes") {
        s.sizes.clear();
        for (const auto& v : split_list(value())) s.sizes.push_back(std::stoi(v));
      } else throw std::invalid_argument("unknown option " + a);
    }
    if (s.threads < 1 || s.reps < 1) throw std::invalid_argument("--threads and --reps must be >= 1");
    cv::setNumThreads(s.threads);
    std::ofstream csv;
    if (!s.csv.empty()) {
      csv.open(s.csv);
      if (!csv) throw std::runtime_error("cannot write " + s.csv);
      csv << "shape,type,kernel,K,opencv_ms,ours_ms,speedup,error,method\n";
    }
    std::printf("gpuconv-bench-cpu: %d threads (OpenCV %s, cv::getNumThreads() = %d), medians of %d interleaved runs\n",
                s.threads, CV_VERSION, cv::getNumThreads(), s.reps);
    std::printf("'same' correlation, reflect101; speedup = OpenCV ms / ours ms (> 1: ours is faster)\n");
    std::printf("error: relative L2 to OpenCV (f32) or the largest difference in LSB (u8)\n\n");
    std::printf("%-16s %-4s %-10s %4s %11s %11s %8s %10s  %s\n", "shape", "type", "kernel", "K", "OpenCV ms",
                "ours ms", "speedup", "error", "our method");
    for (const auto& shape : s.shapes) {
      int planes, h, w;
      if (shape == "4096") planes = 1, h = w = 4096;
      else if (shape == "rgb12mp") planes = 3, h = 3000, w = 4000;
      else throw std::invalid_argument("unknown shape " + shape + " (4096 or rgb12mp)");
      const std::string shape_name = shape == "4096" ? "1x4096x4096" : "3x3000x4000";
      for (const auto& type : s.types) {
        if (type != "f32" && type != "u8") throw std::invalid_argument("unknown type " + type + " (f32 or u8)");
        for (const auto& kind : s.kinds) {
          if (kind != "dense" && kind != "separable")
            throw std::invalid_argument("unknown kernel kind " + kind + " (dense or separable)");
          const char* peer = kind == "dense" ? "filter2D" : "sepFilter2D";
          for (int K : s.sizes) {
            const result r = run_case(s, planes, h, w, type == "u8", K, kind == "separable");
            std::printf("%-16s %-4s %-11s %4d %11.1f %11.1f %7.2fx %10.2g  %s\n", shape_name.c_str(), type.c_str(),
                        peer, K, r.cv_ms, r.ours_ms, r.cv_ms / r.ours_ms, r.error, r.method.c_str());
            std::fflush(stdout);
            if (csv)
              csv << shape_name << ',' << type << ',' << peer << ',' << K << ',' << r.cv_ms << ',' << r.ours_ms << ','
                  << r.cv_ms / r.ours_ms << ',' << r.error << ',' << r.method << '\n';
          }
        }
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuconv-bench-cpu: %s\n", e.what());
    return 1;
  }
}
