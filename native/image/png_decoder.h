// PNG decoding through libpng directly instead of cv::imdecode, so the addon needs no OpenCV imgcodecs (on Debian
// that module links GDAL and ~130 MB of libraries the container image would carry). The pixels are the ones
// cv::imdecode(IMREAD_COLOR) gives with OpenCV 4.6: the same libpng transforms in the same order (16-bit
// stripped to its high byte, alpha and tRNS dropped without compositing, palettes and grey expanded, grey
// replicated to BGR), and the eXIf orientation applied. libpng's warnings are counted, never printed.
#pragma once

#include <cstddef>
#include <cstdint>

#include <opencv2/core.hpp>

namespace edgecv {

// True when the bytes start with the 8-byte PNG signature.
bool LooksLikePng(const uint8_t* data, size_t size);

// OpenCV's own default cap for imdecode; the server refuses far smaller images from their header first
// (src/engine/image-admission.ts). libpng itself refuses a side over 1,000,000.
constexpr uint64_t kMaxPngPixels = uint64_t{1} << 30;

// 8-bit BGR, eXIf orientation applied. Throws JobError(INVALID_IMAGE), also for more than maxPixels.
// `warnings` (optional) receives how many warnings libpng raised (damaged ancillary chunks and the like).
cv::Mat DecodePngBgr(const uint8_t* data, size_t size, int* warnings = nullptr, uint64_t maxPixels = kMaxPngPixels);

}  // namespace edgecv
