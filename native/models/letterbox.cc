#include "models/letterbox.h"

#include <algorithm>
#include <cmath>

#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

#include "image/area_resize.h"
#include "runtime/recycled_buffers.h"

namespace edgecv {

Letterbox LetterboxBlob(const cv::Mat& bgr, const ImageModelSpec& spec, const LetterboxSource& source, cv::Mat* blob) {
  const cv::Rect region = source.region.empty() ? cv::Rect(0, 0, bgr.cols, bgr.rows) : source.region;
  const int size = spec.inputSize;
  const double fit = std::min(static_cast<double>(size) / region.width, static_cast<double>(size) / region.height);
  const int w = std::max(1, std::min(size, static_cast<int>(std::lround(region.width * fit))));
  const int h = std::max(1, std::min(size, static_cast<int>(std::lround(region.height * fit))));

  const auto canvas = [&](int side) {
    return source.roundTo > 0 ? (side + source.roundTo - 1) / source.roundTo * source.roundTo : size;
  };
  const int width = canvas(w), height = canvas(h);
  const int left = (width - w) / 2;
  const int top = (height - h) / 2;

  Letterbox box;
  box.scaleX = static_cast<float>(w) / region.width;
  box.scaleY = static_cast<float>(h) / region.height;
  box.padX = static_cast<float>(left);
  box.padY = static_cast<float>(top);
  box.originX = static_cast<float>(region.x);
  box.originY = static_cast<float>(region.y);

  // Buffers from the recycler: the same sizes come back call after call (runtime/recycled_buffers.h).
  cv::Mat resized = RecyclingMat();
  // INTER_AREA when shrinking avoids the aliasing that blurs small faces and objects away.
  if (w < region.width)
    ResizeArea(bgr(region), resized, cv::Size(w, h));
  else
    cv::resize(bgr(region), resized, cv::Size(w, h), 0, 0, cv::INTER_LINEAR);
  cv::Mat padded = RecyclingMat();
  cv::copyMakeBorder(resized, padded, top, height - h - top, left, width - w - left, cv::BORDER_CONSTANT,
                     cv::Scalar::all(source.padValue));
  if (blob->empty()) blob->allocator = RecyclingAllocator();
  cv::dnn::blobFromImage(padded, *blob, spec.scale, cv::Size(), cv::Scalar::all(spec.meanValue), spec.swapRB, false,
                         CV_32F);
  return box;
}

}  // namespace edgecv
