// Image decoding shared by every job type.
#pragma once

#include <cstddef>
#include <cstdint>

#include <opencv2/core.hpp>

namespace edgecv {

// Decodes a JPEG or PNG (read in place, no copy) into an 8-bit BGR image; other formats are refused.
// EXIF orientation is applied. Throws JobError(INVALID_IMAGE) on failure.
// minLongerSide > 0: a JPEG may come out smaller, its longer side no shorter than that (image/jpeg_decoder.h);
// `fullSize` (optional) receives the image's own size either way.
cv::Mat DecodeBgr(const uint8_t* data, size_t size, int minLongerSide = 0, cv::Size* fullSize = nullptr);

}  // namespace edgecv
