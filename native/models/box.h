// Axis-aligned boxes [l, t, r, b] in pixels, and their overlap: the one IoU of the detectors' NMS and of
// the person-crop pose matching.
#pragma once

#include <algorithm>
#include <array>

namespace edgecv {

using Box = std::array<float, 4>;  // [l, t, r, b]

// Intersection over union; 0 when the boxes do not overlap.
inline float Iou(const Box& a, const Box& b) {
  const float w = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  const float h = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (w <= 0 || h <= 0) return 0.f;
  const float inter = w * h;
  const float uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return uni > 0 ? inter / uni : 0.f;
}

}  // namespace edgecv
