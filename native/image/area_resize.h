// Shrinking an image the way cv::resize(..., INTER_AREA) does, bit for bit, about twice as fast where OpenCV is
// slow: an 8-bit 3-channel image shrunk by a ratio that is not a whole number (a 640x480 photo into a 192x144
// face detector input, a person's 700 px crop into MoveNet's 256). OpenCV runs that case as scalar code; here the
// same float operations run on four source rows at once in SSE2 registers (timings: docs/performance.md, "Pose and
// objects per image").
// test/area-resize.test.ts compiles native/checks/area_resize_check.cc and compares both on random images.
#pragma once

#include <opencv2/core.hpp>

namespace edgecv {

// cv::resize(src, dst, size, 0, 0, cv::INTER_AREA), same output. `dst` may be a view of the right size and type
// (it is then written in place, as cv::resize does).
void ResizeArea(const cv::Mat& src, cv::Mat& dst, cv::Size size);

}  // namespace edgecv
