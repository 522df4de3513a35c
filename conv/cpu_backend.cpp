// CPU backend: the method chosen by method.hpp (direct_cpu.cpp, separable_cpu.cpp, or the
// FFT method here). FFT: the tile pipeline on the host, from the same fft_t (fft/host), tiles spread
// over threads. Per tile: gather (boundary rule) -> row R2C -> transpose -> column FFT,
// multiply by the kernel spectrum, inverse column FFT -> transpose -> row C2R -> scatter.
#include <algorithm>
#include <atomic>
#include <thread>

#include "backend.hpp"
#include "fft/host/real_1d_host.hpp"

namespace gpuconv::conv {

namespace {

using cf = fft::complex_t<float>;

class cpu_backend final : public plan::impl {
 public:
  explicit cpu_backend(problem p)
      : impl(std::move(p)),
        th_(prob.tiles.tile_h),
        tw_(prob.tiles.tile_w),
        half_(tw_ / 2 + 1),
        rows_(tw_, th_, 1),
        columns_(th_) {
    threads_ = prob.options.threads > 0 ? prob.options.threads : (int)std::max(1u, std::thread::hardware_concurrency());
    // the kernels' spectra, each in the transposed layout [half][th]
    std::vector<cf> work((std::size_t)th_ * half_), scratch(th_);
    spectra_.resize(prob.kernels);
    for (int k = 0; k < prob.kernels; ++k) {
      const auto tile = prob.kernel_tile(k);
      spectra_[k].resize(work.size());
      rows_.forward(tile.data(), work.data());
      transpose(work.data(), spectra_[k].data(), th_, half_);
      columns_.forward(spectra_[k].data(), half_, scratch.data());
    }
  }

  backend kind() const override { return backend::cpu; }
  cpu_method method() const override { return cpu_method::fft; }

  void execute(const void* in, void* out, pixel p) override {
    if (p == pixel::f32) {
      run(static_cast<const float*>(in), static_cast<float*>(out), prob.map);
      return;
    }
    // narrow pixels: through float buffers, rounded and saturated on the way out
    std::vector<float> fin(prob.input_elements()), fout(prob.output_elements());
    to_float(in, p, fin.size(), fin.data());
    run(fin.data(), fout.data(), p == pixel::u8 ? map_for<std::uint8_t>(prob.map) : map_for<std::uint16_t>(prob.map));
    from_float(fout.data(), fout.size(), p, out);
  }

 private:
  void run(const float* in, float* out, const tile_map& m) {
    const long long total = prob.total_tiles();
    std::atomic<long long> next{0};
    auto worker = [&] {
      std::vector<float> tile((std::size_t)th_ * tw_);
      std::vector<cf> a((std::size_t)th_ * half_), b(a.size()), scratch(th_);
      for (long long g = next++; g < total; g = next++) run_tile(in, out, m, g, tile, a, b, scratch);
    };
    const int workers = (int)std::min<long long>(threads_, total);
    std::vector<std::thread> pool;
    for (int w = 1; w < workers; ++w) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  }

  static void transpose(const cf* in, cf* out, int rows, int cols) {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) out[(std::size_t)c * rows + r] = in[(std::size_t)r * cols + c];
  }

  void run_tile(const float* in, float* out, const tile_map& m, long long g, std::vector<float>& tile,
                std::vector<cf>& a, std::vector<cf>& b, std::vector<cf>& scratch) const {
    for (int u = 0; u < th_; ++u)
      for (int v = 0; v < tw_; ++v) tile[(std::size_t)u * tw_ + v] = m.gather(in, g, u, v);
    rows_.forward(tile.data(), a.data());
    transpose(a.data(), b.data(), th_, half_);
    columns_.forward(b.data(), half_, scratch.data());
    const std::vector<cf>& spectrum = spectra_[m.locate(g).kernel];
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = b[i] * spectrum[i];
    columns_.inverse(b.data(), half_, scratch.data());
    transpose(b.data(), a.data(), half_, th_);
    rows_.inverse(a.data(), tile.data());
    for (int i = 0; i < m.valid_h; ++i)
      for (int j = 0; j < m.valid_w; ++j) {
        const long long o = m.output_index(g, i, j);
        if (o >= 0) out[o] = tile[(std::size_t)(i + m.kh - 1) * tw_ + (j + m.kw - 1)];
      }
  }

  int th_, tw_, half_, threads_ = 1;
  fft::host::real_1d_plan<float> rows_;
  fft::host::complex_1d_plan<float> columns_;
  std::vector<std::vector<cf>> spectra_;
};

}  // namespace

std::unique_ptr<plan::impl> make_cpu_backend(problem p) {
  const tiling& t = p.tiles;
  cpu_choice c = choose_cpu_method(p.kernel, p.kernels, p.kh, p.kw, t.tile_h, t.tile_w, t.valid_h, t.valid_w,
                                   p.options.cpu);
  switch (c.method) {
    case cpu_method::direct: return make_cpu_direct(std::move(p));
    case cpu_method::separable: return make_cpu_separable(std::move(p), std::move(c.factors));
    default: return std::make_unique<cpu_backend>(std::move(p));
  }
}

}  // namespace gpuconv::conv
