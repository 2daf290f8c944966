#include "models/face_sharpness.h"

#include <algorithm>

#include <opencv2/imgproc.hpp>

namespace edgecv {

double FaceSharpness(const cv::Mat& bgr, const PixelRect& face) {
  const int l = std::clamp(face[0], 0, bgr.cols);
  const int t = std::clamp(face[1], 0, bgr.rows);
  const int r = std::clamp(face[2], 0, bgr.cols);
  const int b = std::clamp(face[3], 0, bgr.rows);
  // The side is the box's shorter side, as the library measures it; a smaller face is measured as it is.
  const int side = std::min({kSharpnessSide, r - l, b - t});
  if (side < 3) return 0;
  cv::Mat grey;
  cv::cvtColor(bgr(cv::Rect(l, t, r - l, b - t)), grey, cv::COLOR_BGR2GRAY);
  cv::Mat level;
  grey.convertTo(level, CV_32F);
  cv::Mat square;
  cv::resize(level, square, cv::Size(side, side), 0, 0, cv::INTER_AREA);
  cv::Mat laplacian;
  cv::Laplacian(square, laplacian, CV_32F, 1);  // ksize 1: the 4-neighbour kernel
  cv::Scalar mean;
  cv::Scalar deviation;
  cv::meanStdDev(laplacian(cv::Rect(1, 1, side - 2, side - 2)), mean, deviation);  // the interior, as in JS
  return deviation[0] * deviation[0];
}

}  // namespace edgecv
