#include "jobs/image.h"

#include <climits>

#include <opencv2/imgcodecs.hpp>

#include "runtime/error_code.h"
#include "jobs/jpeg_decoder.h"

namespace edgecv {

cv::Mat DecodeBgr(const uint8_t* data, size_t size, int minLongerSide, cv::Size* fullSize) {
  if (data == nullptr || size == 0) throw JobError(ErrorCode::kInvalidImage, "empty image buffer");
  if (size > static_cast<size_t>(INT_MAX)) throw JobError(ErrorCode::kInvalidImage, "image buffer over 2 GiB");
  if (LooksLikeJpeg(data, size)) return DecodeJpegBgr(data, size, nullptr, kMaxJpegPixels, minLongerSide, fullSize);
  // A Mat header over the caller's bytes: imdecode only reads them. The JS side
  // keeps the Buffer pinned until the job settles.
  const cv::Mat encoded(1, static_cast<int>(size), CV_8U, const_cast<uint8_t*>(data));
  cv::Mat image;
  try {
    image = cv::imdecode(encoded, cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    throw JobError(ErrorCode::kInvalidImage, std::string("image could not be decoded: ") + e.what());
  }
  if (image.empty()) {
    throw JobError(ErrorCode::kInvalidImage, "image could not be decoded (corrupt or unsupported format)");
  }
  if (fullSize != nullptr) *fullSize = image.size();
  return image;
}

}  // namespace edgecv
