// gpuconv-make-samples: writes the sample images and kernels of data/ (data/README.md).
// Everything is synthetic and deterministic (fixed seeds), so the files are reproducible:
//   gpuconv-make-samples DATA_DIR
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const cv::Mat& m, const std::vector<int>& params = {}) {
  fs::create_directories(p.parent_path());
  if (!cv::imwrite(p.string(), m, params)) throw std::runtime_error("cannot write " + p.string());
  std::cout << "wrote " << p.string() << " (" << m.cols << "x" << m.rows << ", " << m.channels() << " channel"
            << (m.channels() > 1 ? "s" : "") << ", " << (m.depth() == CV_8U ? "8-bit" : m.depth() == CV_16U ? "16-bit" : "float")
            << ")\n";
}

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  std::cout << "wrote " << p.string() << "\n";
}

// A test chart: colour ramps, primary patches, lines of 1..5 px, a zone plate, text.
cv::Mat chart() {
  cv::Mat img(384, 512, CV_8UC3, cv::Scalar(235, 235, 235));
  for (int x = 0; x < 512; ++x) {
    const uchar v = cv::saturate_cast<uchar>(x * 255.0 / 511);
    cv::line(img, {x, 0}, {x, 31}, cv::Scalar(v, v, v));
    cv::line(img, {x, 32}, {x, 47}, cv::Scalar(v, 0, 0));
    cv::line(img, {x, 48}, {x, 63}, cv::Scalar(0, v, 0));
    cv::line(img, {x, 64}, {x, 79}, cv::Scalar(0, 0, v));
  }
  const cv::Scalar patches[] = {{0, 0, 255}, {0, 255, 0}, {255, 0, 0}, {0, 255, 255}, {255, 0, 255}, {255, 255, 0}, {0, 0, 0}, {255, 255, 255}};
  for (int i = 0; i < 8; ++i) cv::rectangle(img, cv::Rect(8 + i * 62, 90, 54, 54), patches[i], cv::FILLED);
  for (int w = 1; w <= 5; ++w) {
    cv::line(img, {16, 160 + w * 14}, {240, 160 + w * 14}, cv::Scalar(20, 20, 20), w, cv::LINE_8);
    cv::line(img, {16 + w * 40, 240}, {60 + w * 40, 370}, cv::Scalar(20, 20, 160), w, cv::LINE_AA);
  }
  for (int y = 160; y < 376; ++y)  // zone plate: rising spatial frequency
    for (int x = 272; x < 504; ++x) {
      const double r2 = (x - 388.0) * (x - 388.0) + (y - 268.0) * (y - 268.0);
      const uchar v = cv::saturate_cast<uchar>(127.5 + 127.5 * std::cos(r2 * 0.0045));
      img.at<cv::Vec3b>(y, x) = cv::Vec3b(v, v, v);
    }
  cv::putText(img, "gpuconv 0123", {20, 160}, cv::FONT_HERSHEY_SIMPLEX, 0.6, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  return img;
}

cv::Mat gray16() {
  cv::Mat img(256, 256, CV_16UC1);
  cv::RNG rng(16);
  for (int y = 0; y < 256; ++y)
    for (int x = 0; x < 256; ++x) {
      const double r = std::hypot(x - 128.0, y - 128.0);
      const double v = 30000 + 25000 * std::cos(r * 0.15) * std::exp(-r / 150) + rng.gaussian(800);
      img.at<ushort>(y, x) = cv::saturate_cast<ushort>(v);
    }
  cv::rectangle(img, cv::Rect(20, 20, 40, 40), cv::Scalar(65535), cv::FILLED);
  cv::rectangle(img, cv::Rect(196, 196, 40, 40), cv::Scalar(0), cv::FILLED);
  return img;
}

cv::Mat logo_rgba() {
  cv::Mat img(256, 256, CV_8UC4, cv::Scalar(0, 0, 0, 0));
  cv::circle(img, {96, 110}, 70, cv::Scalar(40, 60, 220, 255), cv::FILLED, cv::LINE_AA);
  cv::circle(img, {160, 150}, 70, cv::Scalar(220, 120, 30, 160), cv::FILLED, cv::LINE_AA);
  cv::rectangle(img, cv::Rect(40, 200, 176, 30), cv::Scalar(30, 200, 60, 90), cv::FILLED);
  cv::putText(img, "RGBA", {70, 128}, cv::FONT_HERSHEY_DUPLEX, 1.4, cv::Scalar(255, 255, 255, 255), 2, cv::LINE_AA);
  return img;
}

cv::Mat float_field() {
  cv::Mat img(128, 128, CV_32FC1);
  for (int y = 0; y < 128; ++y)
    for (int x = 0; x < 128; ++x) {
      const double r = std::hypot(x - 64.0, y - 64.0) * 0.25 + 1e-9;
      img.at<float>(y, x) = float(std::sin(r) / r * 2 - 0.5 + (x > 100 ? 1.0 : 0.0));
    }
  return img;
}

cv::Mat smooth_noise() {
  cv::Mat img(240, 320, CV_8UC3);
  cv::RNG rng(42);
  rng.fill(img, cv::RNG::UNIFORM, 0, 256);
  cv::GaussianBlur(img, img, {0, 0}, 2.5);
  cv::normalize(img, img, 0, 255, cv::NORM_MINMAX);
  return img;
}

cv::Mat text_gray() {
  cv::Mat img(128, 256, CV_8UC1, cv::Scalar(255));
  cv::putText(img, "Hello", {10, 60}, cv::FONT_HERSHEY_TRIPLEX, 1.6, cv::Scalar(0), 2, cv::LINE_AA);
  cv::putText(img, "convolution", {10, 110}, cv::FONT_HERSHEY_PLAIN, 2.0, cv::Scalar(60), 2, cv::LINE_8);
  return img;
}

cv::Mat star_psf() {
  cv::Mat img(15, 15, CV_8UC1, cv::Scalar(0));
  cv::line(img, {7, 0}, {7, 14}, cv::Scalar(255));
  cv::line(img, {0, 7}, {14, 7}, cv::Scalar(255));
  cv::line(img, {2, 2}, {12, 12}, cv::Scalar(96));
  cv::line(img, {12, 2}, {2, 12}, cv::Scalar(96));
  return img;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: gpuconv-make-samples DATA_DIR\n";
    return 2;
  }
  try {
    const fs::path data(argv[1]);
    write(data / "images" / "chart.png", chart());
    write(data / "images" / "gray16.png", gray16());
    write(data / "images" / "logo-rgba.png", logo_rgba());
    write(data / "images" / "field-float.tif", float_field());
    write(data / "images" / "noise.jpg", smooth_noise(), {cv::IMWRITE_JPEG_QUALITY, 90});
    write(data / "images" / "nested" / "text.png", text_gray());
    write(data / "kernels" / "star-psf.png", star_psf());
    write_text(data / "kernels" / "sharpen.txt",
               "# 3x3 sharpen (sums to 1), space-separated\n"
               " 0 -1  0\n"
               "-1  5 -1\n"
               " 0 -1  0\n");
    write_text(data / "kernels" / "emboss.txt",
               "# emboss, comma-separated (sums to 1)\n"
               "-2, -1, 0\n"
               "-1,  1, 1\n"
               " 0,  1, 2\n");
    write_text(data / "kernels" / "binomial5.txt",
               "# 5x5 binomial blur, tab-separated; use --normalize (the values sum to 256)\n"
               "1\t4\t6\t4\t1\n4\t16\t24\t16\t4\n6\t24\t36\t24\t6\n4\t16\t24\t16\t4\n1\t4\t6\t4\t1\n");
    write_text(data / "kernels" / "roberts-2x2.txt",
               "# an even-sized kernel (Roberts cross); 'same' anchors it at (0, 0) = ((Kh-1)/2, (Kw-1)/2)\n"
               "1  0\n"
               "0 -1\n");
  } catch (const std::exception& e) {
    std::cerr << "gpuconv-make-samples: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
