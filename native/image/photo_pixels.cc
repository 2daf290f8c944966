#include "image/photo_pixels.h"

#include <utility>

namespace edgecv {

namespace {

// Larger than any photo the decoders take (2^30 pixels), small enough that x + width does not overflow.
constexpr int kEverything = 1 << 30;

}  // namespace

PhotoPixels::PhotoPixels(RegionDecoder decode, cv::Mat whole) : decode_(std::move(decode)), pixels_(std::move(whole)) {
  if (!pixels_.empty()) decoded_ = cv::Rect(0, 0, pixels_.cols, pixels_.rows);
}

const cv::Mat& PhotoPixels::Covering(const cv::Rect& region) {
  if (pixels_.empty()) {
    pixels_ = decode_(region, &decoded_);
    return pixels_;
  }
  const cv::Rect inside = region & cv::Rect(0, 0, pixels_.cols, pixels_.rows);
  if ((inside & decoded_) == inside) return pixels_;
  pixels_ = decode_(decoded_.empty() ? inside : (decoded_ | inside), &decoded_);
  return pixels_;
}

const cv::Mat& PhotoPixels::Whole() { return Covering(cv::Rect(0, 0, kEverything, kEverything)); }

}  // namespace edgecv
