// Square crops around a box, padded with black where they leave the image: the face embedder's input,
// the crop kept with an enrolled face, and the person crops of top-down pose.
#pragma once

#include <array>

#include <opencv2/core.hpp>

namespace edgecv {

// [left, top, right, bottom) in image pixels.
using PixelRect = std::array<int, 4>;

// `box` as a cv::Rect.
inline cv::Rect ToRect(const PixelRect& box) { return {box[0], box[1], box[2] - box[0], box[3] - box[1]}; }

// The square region (image pixels, may extend past the image) centred on `box`, its side `scale` times the
// box's longer side.
cv::Rect SquareAround(const PixelRect& box, double scale);

// A region with a side over this comes back from CutPadded() shrunk to it: every caller shrinks it further
// anyway, and a face rect as wide as a 35000x1100 image would otherwise cost a 42000x42000 copy.
constexpr int kMaxCutSide = 4096;

// Pixels of `region`, with black where it lies outside the image (shrunk to kMaxCutSide, see above).
cv::Mat CutPadded(const cv::Mat& bgr, const cv::Rect& region);

}  // namespace edgecv
