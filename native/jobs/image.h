// Image decoding shared by every job type.
#pragma once

#include <cstddef>
#include <cstdint>

#include <opencv2/core.hpp>

namespace edgecv {

// Decodes encoded bytes (read in place, no copy) into an 8-bit BGR image.
// EXIF orientation is applied. Throws JobError(INVALID_IMAGE) on failure.
cv::Mat DecodeBgr(const uint8_t* data, size_t size);

}  // namespace edgecv
