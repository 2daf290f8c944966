// The EXIF orientation tag, read from a TIFF structure (a JPEG's APP1 "Exif" segment after its 6-byte prefix, a
// PNG's eXIf chunk as it is), and applied as cv::imdecode applies it with IMREAD_COLOR.
#pragma once

#include <cstddef>
#include <cstdint>

#include <opencv2/core.hpp>

namespace edgecv {

// The Orientation tag (1..8) of IFD0, 1 when there is none or the structure is unreadable.
int TiffOrientation(const uint8_t* tiff, size_t size);

// Flips and transposes so the picture stands the way the camera saw it (5 to 8 swap width and height).
void ApplyOrientation(cv::Mat& image, int orientation);

}  // namespace edgecv
