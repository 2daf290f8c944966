#include "models/crop.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "image/area_resize.h"

namespace edgecv {

cv::Rect SquareAround(const PixelRect& box, double scale) {
  const double cx = (box[0] + box[2]) / 2.0;
  const double cy = (box[1] + box[3]) / 2.0;
  const double side = std::max(1.0, std::max(box[2] - box[0], box[3] - box[1]) * scale);
  const int s = static_cast<int>(std::lround(side));
  return {static_cast<int>(std::lround(cx - side / 2)), static_cast<int>(std::lround(cy - side / 2)), s, s};
}

cv::Mat CutPadded(const cv::Mat& bgr, const cv::Rect& region) {
  const cv::Rect inside = region & cv::Rect(0, 0, bgr.cols, bgr.rows);
  const int side = std::max(region.width, region.height);
  if (side > kMaxCutSide) {
    // Shrink only the part inside the image, into a black canvas of the shrunk region.
    const double f = static_cast<double>(kMaxCutSide) / side;
    const auto scaled = [f](int v) { return static_cast<int>(std::lround(v * f)); };
    cv::Mat out(std::max(1, scaled(region.height)), std::max(1, scaled(region.width)), bgr.type(), cv::Scalar::all(0));
    const cv::Rect to = cv::Rect(scaled(inside.x - region.x), scaled(inside.y - region.y),
                                 std::max(1, scaled(inside.width)), std::max(1, scaled(inside.height))) &
                        cv::Rect(0, 0, out.cols, out.rows);
    if (inside.area() > 0 && to.area() > 0) {
      cv::Mat target = out(to);
      ResizeArea(bgr(inside), target, to.size());
    }
    return out;
  }
  if (inside == region) return bgr(region);  // a view: no copy when nothing needs padding
  cv::Mat out(region.size(), bgr.type(), cv::Scalar::all(0));
  if (inside.area() > 0) bgr(inside).copyTo(out(inside - region.tl()));
  return out;
}

}  // namespace edgecv
