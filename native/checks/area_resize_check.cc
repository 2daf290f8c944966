// Compares edgecv::ResizeArea with cv::resize(..., INTER_AREA) pixel for pixel: random 8-bit 3-channel images
// of random sizes shrunk to random sizes (whole images and views into larger ones, into fresh Mats and into
// views), then each photo named on the command line shrunk to the sizes the models use. Prints one JSON line;
// exits 1 on any difference. Built and run by test/area-resize.test.ts (not part of the addon).
#include <cstdio>
#include <string>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "image/area_resize.h"

namespace {

int cases = 0, mismatches = 0;

void Compare(const cv::Mat& src, cv::Size size, bool intoView) {
  cv::Mat expected, got;
  cv::resize(src, expected, size, 0, 0, cv::INTER_AREA);
  cv::Mat canvas;
  if (intoView) {
    canvas = cv::Mat(size.height + 6, size.width + 9, CV_8UC3, cv::Scalar::all(7));
    got = canvas(cv::Rect(4, 3, size.width, size.height));
  }
  edgecv::ResizeArea(src, got, size);
  ++cases;
  if (got.size() != size || cv::norm(expected, got, cv::NORM_INF) != 0) {
    if (++mismatches <= 5) {
      std::fprintf(stderr, "differs: %dx%d -> %dx%d%s\n", src.cols, src.rows, size.width, size.height,
                   intoView ? " (into a view)" : "");
    }
  }
  if (intoView && got.data != canvas.ptr(3) + 4 * 3) {
    ++mismatches;
    std::fprintf(stderr, "a view was reallocated: %dx%d -> %dx%d\n", src.cols, src.rows, size.width, size.height);
  }
}

}  // namespace

int main(int argc, char** argv) {
  cv::setNumThreads(1);
  cv::RNG rng(20261125);
  for (int i = 0; i < 400; ++i) {
    const int w = rng.uniform(1, 1000), h = rng.uniform(1, 1000);
    cv::Mat big(h + 20, w + 30, CV_8UC3);
    rng.fill(big, cv::RNG::UNIFORM, 0, 256);
    const cv::Mat src = i % 2 ? big(cv::Rect(11, 7, w, h)) : big(cv::Rect(0, 0, w, h)).clone();
    const cv::Size size(rng.uniform(1, w + 1), rng.uniform(1, h + 1));
    Compare(src, size, i % 3 == 0);
  }
  for (int i = 1; i < argc; ++i) {
    const cv::Mat photo = cv::imread(argv[i], cv::IMREAD_COLOR);
    if (photo.empty()) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 2;
    }
    for (int side : {96, 144, 192, 224, 256, 320, 640}) {
      const double fit = std::min(1.0, static_cast<double>(side) / std::max(photo.cols, photo.rows));
      const cv::Size size(std::max(1, static_cast<int>(photo.cols * fit)),
                          std::max(1, static_cast<int>(photo.rows * fit)));
      Compare(photo, size, false);
    }
  }
  std::printf("{\"cases\":%d,\"mismatches\":%d}\n", cases, mismatches);
  return mismatches == 0 ? 0 : 1;
}
