// Named kernels. Conventions (also in named_kernels_help):
// - gaussian:SIGMA[,SIZE]  g(x) = exp(-x^2 / (2 SIGMA^2)) for x = -r..r, normalised, and the
//   outer product g g^T (sums to 1). SIZE defaults to 2 r + 1 with r = round(4 SIGMA), the
//   radius of SciPy's gaussian_filter (truncate = 4: int(4 SIGMA + 0.5)).
// - box:N, disk:R, motion:LEN,ANGLE: normalised to sum 1.
// - sobel-x / sobel-y: OpenCV's Sobel correlation masks flipped in both axes.
// - laplacian: the 4-neighbour Laplacian; log:SIGMA: Laplacian of Gaussian, shifted to sum 0;
//   unsharp:SIGMA,AMOUNT: (1 + AMOUNT) delta - AMOUNT gaussian(SIGMA), sums to 1.
#include "named_kernels.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>
#include <vector>

#include "errors.hpp"
#include "kernel_io.hpp"

namespace gpuconv::app {

namespace {

constexpr double pi = 3.14159265358979323846;
constexpr int max_side = 4097;  // a sane cap: a named kernel larger than this is a typo

struct spec_parser {
  std::string spec;
  std::vector<std::string> params;

  [[noreturn]] void fail(const std::string& why) const {
    throw usage_error("kernel '" + spec + "': " + why + " (see `gpuconv kernels`)");
  }

  void expect_count(std::size_t min, std::size_t max) const {
    if (params.size() < min)
      fail("expects " + std::to_string(min) + (min == max ? "" : " to " + std::to_string(max)) + " parameter" +
           (max == 1 ? "" : "s") + ", got " + std::to_string(params.size()));
    if (params.size() > max)
      fail("expects at most " + std::to_string(max) + " parameter" + (max == 1 ? "" : "s") + ", got " +
           std::to_string(params.size()));
  }

  double real(std::size_t i, const char* what) const {
    const auto v = parse_number(params[i]);
    if (!v) fail(std::string(what) + " '" + params[i] + "' is not a number");
    if (!std::isfinite(*v)) fail(std::string(what) + " '" + params[i] + "' is not finite");
    return *v;
  }

  double positive(std::size_t i, const char* what) const {
    const double v = real(i, what);
    if (!(v > 0)) fail(std::string(what) + " must be > 0, got " + params[i]);
    return v;
  }

  int integer(std::size_t i, const char* what, int min) const {
    const double v = real(i, what);
    if (v != std::floor(v)) fail(std::string(what) + " must be an integer, got " + params[i]);
    if (v < min) fail(std::string(what) + " must be >= " + std::to_string(min) + ", got " + params[i]);
    if (v > max_side) fail(std::string(what) + " must be <= " + std::to_string(max_side) + ", got " + params[i]);
    return static_cast<int>(v);
  }

  // `side` is computed in double so that huge parameters are refused before any conversion
  // to int (a double outside the int range converted to int is undefined behaviour).
  int side_check(double side) const {
    if (!(side <= max_side)) {
      std::ostringstream text;  // no integer conversion here either: side may be 1e300
      text << std::setprecision(15) << side;
      fail("the kernel would be " + text.str() + " pixels wide, more than " + std::to_string(max_side));
    }
    return static_cast<int>(side);
  }
};

// The kernel from double values; a value beyond the float range (unsharp with a huge AMOUNT)
// is refused rather than converted (to inf, or undefined behaviour).
kernel square(int side, std::vector<double> v, const spec_parser& p) {
  for (double x : v)
    if (!(std::abs(x) <= FLT_MAX))
      p.fail("the parameters give kernel values that are not finite in float (NaN, Inf or beyond 3.4e38)");
  kernel k;
  k.height = k.width = side;
  k.values.assign(v.begin(), v.end());
  k.source = "named kernel '" + p.spec + "'";
  return k;
}

std::vector<double> normalised(std::vector<double> v) {
  double s = 0;
  for (double x : v) s += x;
  for (double& x : v) x /= s;
  return v;
}

// The normalised 1D gaussian of `side` (odd) as doubles.
std::vector<double> gaussian_1d(double sigma, int side) {
  const int r = side / 2;
  std::vector<double> g(side);
  double s = 0;
  for (int i = 0; i < side; ++i) s += g[i] = std::exp(-double(i - r) * (i - r) / (2 * sigma * sigma));
  for (double& x : g) x /= s;
  return g;
}

// The normalised 2D gaussian of `side` (odd) as doubles: outer product of the 1D one.
std::vector<double> gaussian_2d(double sigma, int side) {
  const std::vector<double> g = gaussian_1d(sigma, side);
  std::vector<double> v(std::size_t(side) * side);
  for (int i = 0; i < side; ++i)
    for (int j = 0; j < side; ++j) v[std::size_t(i) * side + j] = g[i] * g[j];
  return v;
}

int gaussian_side(const spec_parser& p, double sigma) { return p.side_check(2 * std::round(4 * sigma) + 1); }

kernel gaussian(const spec_parser& p) {
  p.expect_count(1, 2);
  const double sigma = p.positive(0, "SIGMA");
  int side = p.params.size() > 1 ? p.integer(1, "SIZE", 1) : gaussian_side(p, sigma);
  if (side % 2 == 0) p.fail("SIZE must be odd, got " + std::to_string(side));
  return square(side, gaussian_2d(sigma, side), p);
}

// gaussian3d:SX,SY,SZ (or gaussian3d:SIGMA, isotropic): the product gz(z) gy(y) gx(x) of
// normalised 1D gaussians, each of 2*round(4*S)+1 taps (the 2D gaussian's truncation, per
// axis); sums to 1. At most max_side^2 voxels in all, the largest 2D kernel's count.
kernel gaussian3d(const spec_parser& p) {
  p.expect_count(1, 3);
  if (p.params.size() == 2) p.fail("expects SIGMA or SX,SY,SZ, got 2 parameters");
  const bool iso = p.params.size() == 1;
  const double sx = p.positive(0, iso ? "SIGMA" : "SX"), sy = iso ? sx : p.positive(1, "SY"),
               sz = iso ? sx : p.positive(2, "SZ");
  const int wx = gaussian_side(p, sx), wy = gaussian_side(p, sy), wz = gaussian_side(p, sz);
  if (double(wx) * wy * wz > double(max_side) * max_side)
    p.fail("the kernel would be " + std::to_string(wx) + " x " + std::to_string(wy) + " x " + std::to_string(wz) +
           " voxels, more than " + std::to_string(max_side) + "^2");
  const std::vector<double> gx = gaussian_1d(sx, wx), gy = gaussian_1d(sy, wy), gz = gaussian_1d(sz, wz);
  kernel k;
  k.depth = wz;
  k.height = wy;
  k.width = wx;
  k.values.reserve(std::size_t(wx) * wy * wz);
  for (int z = 0; z < wz; ++z)
    for (int y = 0; y < wy; ++y)
      for (int x = 0; x < wx; ++x) k.values.push_back(float(gz[z] * gy[y] * gx[x]));
  k.source = "named kernel '" + p.spec + "'";
  return k;
}

kernel box(const spec_parser& p) {
  p.expect_count(1, 1);
  const int n = p.integer(0, "N", 1);
  return square(n, std::vector<double>(std::size_t(n) * n, 1.0 / (double(n) * n)), p);
}

kernel disk(const spec_parser& p) {
  p.expect_count(1, 1);
  const double radius = p.positive(0, "R");
  const int side = p.side_check(2.0 * std::floor(radius) + 1), r = side / 2;
  std::vector<double> v(std::size_t(side) * side);
  for (int y = -r; y <= r; ++y)
    for (int x = -r; x <= r; ++x) v[std::size_t(y + r) * side + (x + r)] = x * x + y * y <= radius * radius;
  return square(side, normalised(std::move(v)), p);
}

// A segment of LEN pixels centred on the kernel's centre, at ANGLE degrees counter-clockwise
// from the +x axis as seen on screen (image rows grow downwards, so +y on screen is -row).
// Each pixel gets the weight max(0, 1 - d), d its distance to the segment (ends at +-(LEN-1)/2
// along the direction): a one-pixel-wide tent across the line, exact for axis-aligned lines
// (motion:5,0 is five 1/5 in the middle row; motion:4,0 is 0.5 1 1 1 0.5, normalised).
kernel motion(const spec_parser& p) {
  p.expect_count(2, 2);
  const double length = p.real(0, "LEN");
  if (!(length >= 1)) p.fail("LEN must be >= 1, got " + p.params[0]);
  const double angle = p.real(1, "ANGLE") * pi / 180;
  const double half = (length - 1) / 2;
  const int side = p.side_check(2.0 * std::ceil(half) + 1), r = side / 2;
  const double ux = std::cos(angle), uy = -std::sin(angle);  // direction in (col, row)
  std::vector<double> v(std::size_t(side) * side);
  for (int row = -r; row <= r; ++row)
    for (int col = -r; col <= r; ++col) {
      const double t = std::clamp(col * ux + row * uy, -half, half);  // nearest point of the segment
      const double d = std::hypot(col - t * ux, row - t * uy);
      v[std::size_t(row + r) * side + (col + r)] = std::max(0.0, 1 - d);
    }
  return square(side, normalised(std::move(v)), p);
}

kernel fixed3(const spec_parser& p, std::vector<double> v) {
  p.expect_count(0, 0);
  return square(3, std::move(v), p);
}

// Laplacian of the normalised gaussian: (r^2 - 2 sigma^2) / sigma^4 * g, negative at the
// centre like `laplacian`, then shifted by its mean so that it sums to 0 (a flat image gives 0).
kernel log_kernel(const spec_parser& p) {
  p.expect_count(1, 1);
  const double sigma = p.positive(0, "SIGMA");
  const int side = gaussian_side(p, sigma), r = side / 2;
  std::vector<double> v = gaussian_2d(sigma, side);
  double s = 0;
  for (int y = -r; y <= r; ++y)
    for (int x = -r; x <= r; ++x) {
      double& e = v[std::size_t(y + r) * side + (x + r)];
      e *= (x * x + y * y - 2 * sigma * sigma) / (sigma * sigma * sigma * sigma);
      s += e;
    }
  for (double& e : v) e -= s / v.size();
  return square(side, std::move(v), p);
}

kernel unsharp(const spec_parser& p) {
  p.expect_count(2, 2);
  const double sigma = p.positive(0, "SIGMA");
  const double amount = p.real(1, "AMOUNT");
  if (amount < 0) p.fail("AMOUNT must be >= 0, got " + p.params[1]);
  const int side = gaussian_side(p, sigma);
  std::vector<double> v = gaussian_2d(sigma, side);
  for (double& e : v) e *= -amount;
  v[v.size() / 2] += 1 + amount;
  return square(side, std::move(v), p);
}

using factory = std::function<kernel(const spec_parser&)>;

const std::map<std::string, factory>& table() {
  static const std::map<std::string, factory> t{
      {"gaussian", gaussian},
      {"gaussian3d", gaussian3d},
      {"box", box},
      {"disk", disk},
      {"motion", motion},
      {"sobel-x", [](const spec_parser& p) { return fixed3(p, {1, 0, -1, 2, 0, -2, 1, 0, -1}); }},
      {"sobel-y", [](const spec_parser& p) { return fixed3(p, {1, 2, 1, 0, 0, 0, -1, -2, -1}); }},
      {"laplacian", [](const spec_parser& p) { return fixed3(p, {0, 1, 0, 1, -4, 1, 0, 1, 0}); }},
      {"log", log_kernel},
      {"unsharp", unsharp},
  };
  return t;
}

}  // namespace

std::optional<kernel> make_named_kernel(const std::string& spec) {
  const auto colon = spec.find(':');
  const auto it = table().find(spec.substr(0, colon));
  if (it == table().end()) return std::nullopt;
  spec_parser p{spec, {}};
  if (colon != std::string::npos) {
    std::string rest = spec.substr(colon + 1);
    std::size_t start = 0;
    while (true) {
      const auto comma = rest.find(',', start);
      p.params.push_back(rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    for (const auto& param : p.params)
      if (param.empty()) p.fail("empty parameter");
  }
  return it->second(p);
}

std::string named_kernels_help() {
  return R"(Named kernels (KERNEL argument). All are defined for the default operation, true
convolution, and give the conventional result with it:

  gaussian:SIGMA[,SIZE]  normalised gaussian, SIZE x SIZE (odd); default SIZE = 2*round(4*SIGMA)+1,
                         the radius of scipy.ndimage.gaussian_filter (truncate=4). Sums to 1.
  gaussian3d:SX,SY,SZ    3D gaussian for stacks (multi-page TIFF inputs), sigmas along x, y, z
  gaussian3d:SIGMA       (one SIGMA: isotropic); 2*round(4*S)+1 taps per axis. Sums to 1.
  box:N                  N x N mean filter, every value 1/N^2.
  disk:R                 (2*floor(R)+1)^2 square, 1 where x^2 + y^2 <= R^2, normalised to sum 1.
  motion:LEN,ANGLE       a line of LEN pixels through the centre at ANGLE degrees counter-clockwise
                         from the x axis (as seen on screen); each pixel weighs max(0, 1 - distance
                         to the segment); normalised to sum 1.
  sobel-x, sobel-y       3x3 Sobel derivative; the stored matrix is OpenCV's correlation mask
                         flipped in both axes, so convolution has the sign of cv::Sobel(dx=1) /
                         (dy=1): sobel-x = [1 0 -1; 2 0 -2; 1 0 -1], positive where the image
                         grows to the right (with --correlate use the unflipped mask instead).
  laplacian              [0 1 0; 1 -4 1; 0 1 0].
  log:SIGMA              Laplacian of Gaussian, size 2*round(4*SIGMA)+1, negative centre,
                         shifted to sum exactly 0.
  unsharp:SIGMA,AMOUNT   (1+AMOUNT)*delta - AMOUNT*gaussian(SIGMA): sharpening; sums to 1.

Parameters are decimal numbers; sizes are integers. Examples: gaussian:2  gaussian:1.5,7
box:5  disk:3  motion:9,45  unsharp:2,1.5
)";
}

}  // namespace gpuconv::app
