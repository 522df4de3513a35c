// Measures nvJPEG's throughput on a GPU machine for 12 MP photos, by backend, alone and side by
// side: the hardware decoder (batched, as gpuconv's decode stages use it), the decoupled decoder
// (NVJPEG_BACKEND_GPU_HYBRID and NVJPEG_BACKEND_HYBRID, one image at a time) and the encoder
// (quality 95, 4:2:0, as gpuconv's workers use it); also the hardware and GPU-hybrid decoders'
// pixel difference on the first files. A measurement tool, not built by CMake:
//   g++ -O2 -std=c++20 -I/usr/local/cuda/include -o nvjpeg-decode-probe
//       scripts/nvjpeg-decode-probe.cpp -L/usr/local/cuda/lib64 -lnvjpeg -lcudart -pthread
//   nvjpeg-decode-probe DIR N RUN...
// (DIR: photos, e.g. D/in-jpeg after `gpuconv bench --workload jpeg --images 256 --device cpu
// --no-peer --rounds 1 --dir D --keep`)
// Each RUN decodes (or encodes) N images over DIR's first 256 .jpg files: hw:THREADS:BATCH,
// gpu:THREADS, cpu:THREADS (NVJPEG_BACKEND_HYBRID), enc:THREADS, enc2:THREADS (the encoder on a
// handle of its own), encd:THREADS (the bitstream to device memory with
// nvjpegEncodeRetrieveBitstreamDevice, then one copy to page-locked memory; PROBE_ENC_OUT=P
// writes each encoder's first bitstream to P-KIND.jpg), gb:THREADS:BATCH (nvjpegDecodeBatched
// on the second handle: with PROBE_GPU_BACKEND=gpu_hybrid that handle is
// NVJPEG_BACKEND_GPU_HYBRID, whose batched decoder does the Huffman decode on the GPU for
// batches of more than 50). PROBE_BLOCKING=1 sets
// cudaDeviceScheduleBlockingSync first, as gpuconv does (otherwise the waits spin and count as
// CPU time). PROBE_PRIORITY=dec|enc sets the streams' priorities (see worker). "a+b" runs a
// and b at once on a shared count. Prints images/s and the
// process's CPU time for each run. (A second hardware-backend handle in the process - without the
// strict checks, or NVJPEG_BACKEND_HARDWARE_DEVICE for bitstreams in device memory - failed at its
// first batch on an H100, nvJPEG 13.0, so neither is measured here.)
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>
#include <algorithm>
#include <sys/resource.h>

#define CK(x)                                                                  \
  do {                                                                         \
    auto s_ = (x);                                                             \
    if (int(s_) != 0) {                                                        \
      std::fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, int(s_)); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

struct file {
  std::vector<unsigned char> bytes;
  int w = 0, h = 0;
};
std::vector<file> files;
nvjpegHandle_t hw_handle = nullptr, gpu_handle = nullptr;
const unsigned flags = NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION | NVJPEG_FLAGS_BITSTREAM_STRICT;

// nvJPEG's decoupled decoder (one image at a time, on gpu_handle) with its state and buffers
struct decoupled {
  nvjpegJpegDecoder_t decoder;
  nvjpegJpegState_t state;
  nvjpegBufferPinned_t pinned;
  nvjpegBufferDevice_t device;
  nvjpegJpegStream_t jstream;
  nvjpegDecodeParams_t params;
  explicit decoupled(nvjpegBackend_t backend) {
    CK(nvjpegDecoderCreate(gpu_handle, backend, &decoder));
    CK(nvjpegDecoderStateCreate(gpu_handle, decoder, &state));
    CK(nvjpegBufferPinnedCreate(gpu_handle, nullptr, &pinned));
    CK(nvjpegBufferDeviceCreate(gpu_handle, nullptr, &device));
    CK(nvjpegStateAttachPinnedBuffer(state, pinned));
    CK(nvjpegStateAttachDeviceBuffer(state, device));
    CK(nvjpegJpegStreamCreate(gpu_handle, &jstream));
    CK(nvjpegDecodeParamsCreate(gpu_handle, &params));
    CK(nvjpegDecodeParamsSetOutputFormat(params, NVJPEG_OUTPUT_BGR));
  }
  // queues the decode of f into im on stream
  void decode(const file& f, nvjpegImage_t& im, cudaStream_t stream) {
    CK(nvjpegJpegStreamParse(gpu_handle, f.bytes.data(), f.bytes.size(), 0, 0, jstream));
    CK(nvjpegDecodeJpegHost(gpu_handle, decoder, state, params, jstream));
    CK(nvjpegDecodeJpegTransferToDevice(gpu_handle, decoder, state, jstream, stream));
    CK(nvjpegDecodeJpegDevice(gpu_handle, decoder, state, &im, stream));
  }
};

std::atomic<long long> encode_call_ns{0}, retrieve_ns{0};  // the encoders' time, summed over threads
std::atomic<int> encodes{0};

struct job {
  std::string kind;  // hw, gpu, cpu
  int threads = 1, batch = 8;
};

// one worker thread; takes files from `next` until `count` are done (wrapping over files)
void worker(const job& j, std::atomic<int>& next, int count, std::atomic<int>& done, std::barrier<>& start) {
  cudaStream_t stream;
  // PROBE_PRIORITY=dec: the decoders' streams at the device's greatest priority, the encoders'
  // at the least; =enc the other way round; unset: every stream at the default priority.
  const char* pr = std::getenv("PROBE_PRIORITY");
  if (pr && *pr) {
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    const bool encoder = j.kind.rfind("enc", 0) == 0;
    const bool high = (std::string(pr) == "dec") != encoder;
    CK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, high ? greatest : least));
  } else {
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  const std::size_t plane = std::size_t(4000) * 3000;
  const int slots = j.kind == "hw" || j.kind == "gb" ? j.batch : 1;
  unsigned char* out = nullptr;
  CK(cudaMalloc(&out, 3 * plane * slots));
  auto image = [&](int k, const file& f) {
    nvjpegImage_t im{};
    for (int c = 0; c < 3; ++c) {
      im.channel[c] = out + (std::size_t(k) * 3 + c) * plane;
      im.pitch[c] = std::size_t(f.w);
    }
    return im;
  };
  if (j.kind == "hw" || j.kind == "gb") {
    const nvjpegHandle_t bh = j.kind == "hw" ? hw_handle : gpu_handle;
    nvjpegJpegState_t state;
    CK(nvjpegJpegStateCreate(bh, &state));
    CK(nvjpegDecodeBatchedInitialize(bh, state, j.batch, 1, NVJPEG_OUTPUT_BGR));
    std::vector<const unsigned char*> data(j.batch);
    std::vector<std::size_t> sizes(j.batch);
    std::vector<nvjpegImage_t> ims(j.batch);
    auto run = [&](int first) {
      for (int k = 0; k < j.batch; ++k) {
        const file& f = files[(first + k) % files.size()];
        data[k] = f.bytes.data();
        sizes[k] = f.bytes.size();
        ims[k] = image(k, f);
      }
      CK(nvjpegDecodeBatched(bh, state, data.data(), sizes.data(), ims.data(), stream));
      CK(cudaStreamSynchronize(stream));
    };
    run(0);  // warm-up
    start.arrive_and_wait();
    for (int i; (i = next.fetch_add(j.batch)) < count;) {
      run(i);
      done += j.batch;
    }
  } else if (j.kind == "enc" || j.kind == "enc2" || j.kind == "encd") {
    // enc2: on a handle of its own (NVJPEG_BACKEND_DEFAULT), not the hardware decoder's
    const nvjpegHandle_t eh = j.kind == "enc2" ? gpu_handle : hw_handle;
    // encodes the first file's pixels again and again (quality 95, 4:2:0), bitstream to pinned memory
    {
      nvjpegJpegState_t hs;
      CK(nvjpegJpegStateCreate(hw_handle, &hs));
      CK(nvjpegDecodeBatchedInitialize(hw_handle, hs, 1, 1, NVJPEG_OUTPUT_BGR));
      const unsigned char* d = files[0].bytes.data();
      const std::size_t n = files[0].bytes.size();
      nvjpegImage_t im = image(0, files[0]);
      CK(nvjpegDecodeBatched(hw_handle, hs, &d, &n, &im, stream));
      CK(cudaStreamSynchronize(stream));
    }
    nvjpegEncoderState_t enc;
    nvjpegEncoderParams_t params;
    CK(nvjpegEncoderStateCreate(eh, &enc, stream));
    CK(nvjpegEncoderParamsCreate(eh, &params, stream));
    CK(nvjpegEncoderParamsSetSamplingFactors(params, NVJPEG_CSS_420, stream));
    CK(nvjpegEncoderParamsSetOptimizedHuffman(params, 0, stream));
    CK(nvjpegEncoderParamsSetQuality(params, 95, stream));
    unsigned char* host = nullptr;
    CK(cudaHostAlloc((void**)&host, 16 << 20, cudaHostAllocDefault));
    unsigned char* dev = nullptr;  // encd: the bitstream to device memory, then one copy to host
    CK(cudaMalloc((void**)&dev, 16 << 20));
    using clk = std::chrono::steady_clock;
    auto run = [&]() -> std::size_t {
      nvjpegImage_t im = image(0, files[0]);
      const auto t0 = clk::now();
      CK(nvjpegEncodeImage(eh, enc, params, &im, NVJPEG_INPUT_BGR, files[0].w, files[0].h, stream));
      const auto t1 = clk::now();
      std::size_t length = 0;
      if (j.kind == "encd") {
        CK(nvjpegEncodeRetrieveBitstreamDevice(eh, enc, nullptr, &length, stream));
        std::size_t room = 16 << 20;
        CK(nvjpegEncodeRetrieveBitstreamDevice(eh, enc, dev, &room, stream));
        length = room;
        CK(cudaMemcpyAsync(host, dev, length, cudaMemcpyDeviceToHost, stream));
      } else {
        CK(nvjpegEncodeRetrieveBitstream(eh, enc, nullptr, &length, stream));
        CK(nvjpegEncodeRetrieveBitstream(eh, enc, host, &length, stream));
      }
      CK(cudaStreamSynchronize(stream));
      const auto t2 = clk::now();
      encode_call_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
      retrieve_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count();
      ++encodes;
      return length;
    };
    {
      const std::size_t length = run();
      std::printf("%s: first bitstream %zu bytes, checksum %llu\n", j.kind.c_str(), length, [&] {
        unsigned long long h = 1469598103934665603ull;
        for (std::size_t k = 0; k < length; ++k) h = (h ^ host[k]) * 1099511628211ull;
        return h;
      }());
      if (const char* o = std::getenv("PROBE_ENC_OUT")) {  // the bitstream to a file, to check it decodes
        std::ofstream f(std::string(o) + "-" + j.kind + ".jpg", std::ios::binary);
        f.write(reinterpret_cast<const char*>(host), std::streamsize(length));
      }
      encode_call_ns = 0;
      retrieve_ns = 0;
      encodes = 0;
    }
    start.arrive_and_wait();
    for (int i; (i = next.fetch_add(1)) < count;) {
      run();
      ++done;
    }
  } else {
    decoupled d(j.kind == "gpu" ? NVJPEG_BACKEND_GPU_HYBRID : NVJPEG_BACKEND_HYBRID);
    auto run = [&](int i) {
      const file& f = files[i % files.size()];
      nvjpegImage_t im = image(0, f);
      d.decode(f, im, stream);
      CK(cudaStreamSynchronize(stream));
    };
    run(0);
    start.arrive_and_wait();
    for (int i; (i = next.fetch_add(1)) < count;) {
      run(i);
      ++done;
    }
  }
}

// The two decoders' pixels for the first files: largest and mean difference.
void compare() {
  const file& f0 = files[0];
  const std::size_t plane = std::size_t(f0.w) * f0.h;
  unsigned char *a, *b;
  CK(cudaMalloc(&a, 3 * plane));
  CK(cudaMalloc(&b, 3 * plane));
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  nvjpegJpegState_t hs;
  CK(nvjpegJpegStateCreate(hw_handle, &hs));
  CK(nvjpegDecodeBatchedInitialize(hw_handle, hs, 1, 1, NVJPEG_OUTPUT_BGR));
  decoupled dec(NVJPEG_BACKEND_GPU_HYBRID);
  std::vector<unsigned char> ha(3 * plane), hb(3 * plane);
  for (int i = 0; i < 4 && i < int(files.size()); ++i) {
    const file& f = files[i];
    nvjpegImage_t ia{}, ib{};
    for (int c = 0; c < 3; ++c) {
      ia.channel[c] = a + c * plane;
      ib.channel[c] = b + c * plane;
      ia.pitch[c] = ib.pitch[c] = std::size_t(f.w);
    }
    const unsigned char* d = f.bytes.data();
    const std::size_t n = f.bytes.size();
    CK(nvjpegDecodeBatched(hw_handle, hs, &d, &n, &ia, stream));
    dec.decode(f, ib, stream);
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(ha.data(), a, 3 * plane, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb.data(), b, 3 * plane, cudaMemcpyDeviceToHost));
    int worst = 0;
    long long sum = 0, differ = 0;
    for (std::size_t k = 0; k < 3 * plane; ++k) {
      const int e = std::abs(int(ha[k]) - int(hb[k]));
      worst = std::max(worst, e);
      sum += e;
      differ += e != 0;
    }
    std::printf("file %d: hardware vs GPU hybrid: max %d, mean %.4f, %.3f%% of samples differ\n", i, worst,
                double(sum) / (3 * plane), 100.0 * differ / (3 * plane));
  }
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s DIR N RUN...\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> paths;
  for (auto& e : std::filesystem::directory_iterator(argv[1]))
    if (e.path().extension() == ".jpg") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  const int n = std::atoi(argv[2]);
  for (auto& p : paths) {
    if (int(files.size()) >= 256) break;
    std::ifstream in(p, std::ios::binary);
    file f;
    f.bytes.assign(std::istreambuf_iterator<char>(in), {});
    files.push_back(std::move(f));
  }
  if (const char* e = std::getenv("PROBE_BLOCKING"); e && *e == '1') CK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  CK(nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, flags, &hw_handle));
  // PROBE_SHARED_HANDLE=1: the decoupled decoders and enc2 on the hardware decoder's handle
  const char* backend = std::getenv("PROBE_GPU_BACKEND");
  const bool gpu_hybrid = backend && std::string(backend) == "gpu_hybrid";
  if (const char* e = std::getenv("PROBE_SHARED_HANDLE"); e && *e == '1')
    gpu_handle = hw_handle;
  else
    CK(nvjpegCreateEx(gpu_hybrid ? NVJPEG_BACKEND_GPU_HYBRID : NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, flags,
                      &gpu_handle));
  for (auto& f : files) {
    int nc;
    nvjpegChromaSubsampling_t ss;
    int w[4], h[4];
    CK(nvjpegGetImageInfo(hw_handle, f.bytes.data(), f.bytes.size(), &nc, &ss, w, h));
    f.w = w[0];
    f.h = h[0];
  }
  std::printf("%zu files of %dx%d\n", files.size(), files[0].w, files[0].h);
  compare();
  for (int a = 3; a < argc; ++a) {
    std::vector<job> jobs;
    std::string spec = argv[a];
    for (std::size_t pos = 0; pos <= spec.size();) {
      std::size_t end = spec.find('+', pos);
      if (end == std::string::npos) end = spec.size();
      std::string part = spec.substr(pos, end - pos);
      job j;
      j.kind = part.substr(0, part.find(':'));
      std::sscanf(part.c_str() + part.find(':') + 1, "%d:%d", &j.threads, &j.batch);
      jobs.push_back(j);
      pos = end + 1;
    }
    int threads = 0;
    for (auto& j : jobs) threads += j.threads;
    std::barrier<> start(threads + 1);
    std::atomic<int> next{0};
    std::vector<std::atomic<int>> done(jobs.size());
    std::vector<std::thread> ts;
    for (std::size_t k = 0; k < jobs.size(); ++k)
      for (int t = 0; t < jobs[k].threads; ++t) ts.emplace_back(worker, std::cref(jobs[k]), std::ref(next), n, std::ref(done[k]), std::ref(start));
    auto cpu_seconds = [] {
      rusage u{};
      getrusage(RUSAGE_SELF, &u);
      return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    };
    start.arrive_and_wait();
    const double c0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - c0;
    int total = 0;
    for (auto& d : done) total += d;
    std::printf("%-28s %6d images in %.3f s: %7.1f images/s, CPU %.2f s (%.1f ms an image)", spec.c_str(), total, s,
                total / s, cpu, 1e3 * cpu / total);
    for (std::size_t k = 0; k < jobs.size(); ++k) std::printf(" | %s %d (%.1f/s)", jobs[k].kind.c_str(), int(done[k]), done[k] / s);
    if (encodes > 0)
      std::printf(" | encode call %.3f ms, bitstream to host %.3f ms an encode", encode_call_ns * 1e-6 / encodes,
                  retrieve_ns * 1e-6 / encodes);
    encode_call_ns = 0;
    retrieve_ns = 0;
    encodes = 0;
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
