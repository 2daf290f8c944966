#include "models/letterbox.h"

#include <algorithm>
#include <cmath>

#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

namespace edgecv {

Letterbox LetterboxBlob(const cv::Mat& bgr, int size, double mean, double scale, bool swapRB, cv::Mat* blob,
                        double padValue) {
  const double fit = std::min(static_cast<double>(size) / bgr.cols, static_cast<double>(size) / bgr.rows);
  const int w = std::max(1, std::min(size, static_cast<int>(std::lround(bgr.cols * fit))));
  const int h = std::max(1, std::min(size, static_cast<int>(std::lround(bgr.rows * fit))));
  const int left = (size - w) / 2;
  const int top = (size - h) / 2;

  cv::Mat resized;
  // INTER_AREA when shrinking avoids the aliasing that blurs small objects away.
  cv::resize(bgr, resized, cv::Size(w, h), 0, 0, w < bgr.cols ? cv::INTER_AREA : cv::INTER_LINEAR);
  cv::Mat padded;
  cv::copyMakeBorder(resized, padded, top, size - h - top, left, size - w - left, cv::BORDER_CONSTANT,
                     cv::Scalar::all(padValue));
  cv::dnn::blobFromImage(padded, *blob, scale, cv::Size(), cv::Scalar::all(mean), swapRB, false, CV_32F);

  Letterbox box;
  // The longer side fills the input exactly; using it keeps the mapping exact there.
  box.scale = static_cast<float>(bgr.cols >= bgr.rows ? static_cast<double>(w) / bgr.cols : static_cast<double>(h) / bgr.rows);
  box.padX = static_cast<float>(left);
  box.padY = static_cast<float>(top);
  return box;
}

}  // namespace edgecv
