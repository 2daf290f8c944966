// JPEG decoding through libjpeg(-turbo) directly instead of cv::imdecode. The pixels are the same (same
// library, same defaults); the difference is libjpeg's warnings on damaged data ("Corrupt JPEG data: 3
// extraneous bytes before marker"), which OpenCV leaves libjpeg to print on stderr, one line per damaged
// image a client sends. Here they are counted, and fatal errors become the job's INVALID_IMAGE message.
#pragma once

#include <cstddef>
#include <cstdint>

#include <opencv2/core.hpp>

namespace edgecv {

// True when the bytes start with a JPEG SOI marker.
bool LooksLikeJpeg(const uint8_t* data, size_t size);

// True when a JPEG's frame header (the first SOF marker) says progressive (SOF2, SOF6, SOF10, SOF14). Its DCT-scaled
// decode costs as much as a whole one: every scan is entropy-decoded into a full-size coefficient buffer first.
bool IsProgressiveJpeg(const uint8_t* data, size_t size);

// OpenCV's own default cap for imdecode. The server refuses far smaller images from their header first
// (src/engine/image-admission.ts, the policy); this is only the memory-safety bound.
constexpr uint64_t kMaxJpegPixels = uint64_t{1} << 30;

// 8-bit BGR, EXIF orientation applied (as cv::imdecode with IMREAD_COLOR does). Throws JobError(INVALID_IMAGE),
// also for more than maxPixels (counted at full size). `warnings` (optional) receives how many corrupt-data
// warnings libjpeg raised. minLongerSide > 0: decoded smaller where libjpeg's DCT scaling (1/2, 1/4, 1/8) keeps
// the longer side at least that long (a downscale as good as an area filter, for a fraction of the decoding);
// `fullSize` (optional) receives the image's own size, orientation applied.
cv::Mat DecodeJpegBgr(const uint8_t* data, size_t size, int* warnings = nullptr, uint64_t maxPixels = kMaxJpegPixels,
                      int minLongerSide = 0, cv::Size* fullSize = nullptr);

// How much further each way than asked a partial decode crops its columns (DecodeJpegRegionBgr): more than the
// one column whose pixels libjpeg-turbo computes differently at a crop's edge, and more than any chroma block.
constexpr int kRegionCropMargin = 32;

// The JPEG at its own size (EXIF orientation applied) with only `region` decoded (its part inside the picture), every
// other pixel black: those pixels exactly as DecodeJpegBgr gives them, for the cost of decoding the rows down to the
// region's last and the columns near it. `decoded` (optional) receives the part decoded (empty for a region wholly
// outside the picture: nothing is decoded). Throws as DecodeJpegBgr. `cropMargin` is for the check program only
// (native/checks/region_decode_check.cc), which shows what too small a margin costs.
cv::Mat DecodeJpegRegionBgr(const uint8_t* data, size_t size, const cv::Rect& region, cv::Rect* decoded = nullptr,
                            uint64_t maxPixels = kMaxJpegPixels, int cropMargin = kRegionCropMargin);

}  // namespace edgecv
