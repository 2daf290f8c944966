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

// The image at its own size with at least `region`'s part inside it decoded, the same pixels as DecodeBgr's: a
// baseline JPEG decodes only that part, the rest black (image/jpeg_decoder.h); a progressive JPEG (its every scan is
// decoded first anyway) and a PNG decode whole. `decoded` receives the part that holds the image's pixels.
cv::Mat DecodeBgrRegion(const uint8_t* data, size_t size, const cv::Rect& region, cv::Rect* decoded);

}  // namespace edgecv
