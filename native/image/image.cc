#include "image/image.h"

#include <climits>

#include "image/jpeg_decoder.h"
#include "image/png_decoder.h"
#include "runtime/error_code.h"

namespace edgecv {

cv::Mat DecodeBgr(const uint8_t* data, size_t size, int minLongerSide, cv::Size* fullSize) {
  if (data == nullptr || size == 0) throw JobError(ErrorCode::kInvalidImage, "empty image buffer");
  if (size > static_cast<size_t>(INT_MAX)) throw JobError(ErrorCode::kInvalidImage, "image buffer over 2 GiB");
  if (LooksLikeJpeg(data, size)) return DecodeJpegBgr(data, size, nullptr, kMaxJpegPixels, minLongerSide, fullSize);
  if (!LooksLikePng(data, size)) {
    throw JobError(ErrorCode::kInvalidImage, "image could not be decoded: not a PNG or JPEG");
  }
  cv::Mat image = DecodePngBgr(data, size, nullptr, kMaxPngPixels);  // always whole: PNG has no cheap downscale
  if (fullSize != nullptr) *fullSize = image.size();
  return image;
}

}  // namespace edgecv
