#include "image/image.h"

#include <climits>

#include "image/jpeg_decoder.h"
#include "image/png_decoder.h"
#include "runtime/error_code.h"

namespace edgecv {

namespace {

void CheckBuffer(const uint8_t* data, size_t size) {
  if (data == nullptr || size == 0) throw JobError(ErrorCode::kInvalidImage, "empty image buffer");
  if (size > static_cast<size_t>(INT_MAX)) throw JobError(ErrorCode::kInvalidImage, "image buffer over 2 GiB");
}

}  // namespace

cv::Mat DecodeBgr(const uint8_t* data, size_t size, int minLongerSide, cv::Size* fullSize) {
  CheckBuffer(data, size);
  if (LooksLikeJpeg(data, size)) return DecodeJpegBgr(data, size, nullptr, kMaxJpegPixels, minLongerSide, fullSize);
  if (!LooksLikePng(data, size)) {
    throw JobError(ErrorCode::kInvalidImage, "image could not be decoded: not a PNG or JPEG");
  }
  cv::Mat image = DecodePngBgr(data, size, nullptr, kMaxPngPixels);  // always whole: PNG has no cheap downscale
  if (fullSize != nullptr) *fullSize = image.size();
  return image;
}

cv::Mat DecodeBgrRegion(const uint8_t* data, size_t size, const cv::Rect& region, cv::Rect* decoded) {
  CheckBuffer(data, size);
  if (LooksLikeJpeg(data, size) && !IsProgressiveJpeg(data, size)) {
    return DecodeJpegRegionBgr(data, size, region, decoded);
  }
  cv::Mat image = DecodeBgr(data, size);
  *decoded = cv::Rect(0, 0, image.cols, image.rows);
  return image;
}

}  // namespace edgecv
