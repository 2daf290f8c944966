// How sharp a face is, the same measure as the face library's (src/gallery/sample-quality.ts): the variance of the
// 4-neighbour Laplacian of the face box's grey levels, the box first averaged down to kSharpnessSide when larger.
// Measured here on the decoded photo, so recognition can tell a face too blurred to judge at no JPEG round trip.
#pragma once

#include <opencv2/core.hpp>

#include "models/crop.h"  // PixelRect

namespace edgecv {

// Side a larger face box is averaged down to before the Laplacian: about the embedder's input (SHARPNESS_SIDE).
constexpr int kSharpnessSide = 112;

// The sharpness of `face` (clipped to the image) in a BGR image; 0 for a box under 3 px.
double FaceSharpness(const cv::Mat& bgr, const PixelRect& face);

}  // namespace edgecv
