#include "jobs/image_job.h"

#include "image/image.h"

#include <algorithm>

#include <opencv2/imgproc.hpp>

#include "image/jpeg_decoder.h"

namespace edgecv {

ImageJob::ImageJob(Napi::Env env, Napi::Uint8Array bytes) : Job(env), data_(bytes.Data()), size_(bytes.ByteLength()) {
  Pin(bytes);
}

namespace {

// `whole` at the size libjpeg's DCT scaling (1/2, 1/4, 1/8, ceiling) gives for minLongerSide (jpeg_decoder.cc),
// shrunk by area; `whole` itself when none applies.
cv::Mat ShrunkAsDctScaling(const cv::Mat& whole, int minLongerSide) {
  if (minLongerSide <= 0) return whole;
  const int longer = std::max(whole.cols, whole.rows);
  for (int denom = 8; denom > 1; denom /= 2) {
    if ((longer + denom - 1) / denom < minLongerSide) continue;
    cv::Mat out;
    cv::resize(whole, out, cv::Size((whole.cols + denom - 1) / denom, (whole.rows + denom - 1) / denom), 0, 0,
               cv::INTER_AREA);
    return out;
  }
  return whole;
}

}  // namespace

cv::Mat ImageJob::DecodeImage(int minLongerSide) {
  const auto t0 = Clock::now();
  cv::Mat image;
  if (!whole_.empty()) {
    image = ShrunkAsDctScaling(whole_, minLongerSide);
  } else if (IsProgressiveJpeg(data_, size_)) {
    cv::Size full;
    whole_ = DecodeBgr(data_, size_, 0, &full);
    ++decodes_;
    width_ = full.width;
    height_ = full.height;
    image = ShrunkAsDctScaling(whole_, minLongerSide);
  } else {
    cv::Size full;
    image = DecodeBgr(data_, size_, minLongerSide, &full);
    ++decodes_;
    width_ = full.width;
    height_ = full.height;
  }
  decodeMs_ += MillisBetween(t0, Clock::now());
  return image;
}

cv::Mat ImageJob::DecodeImageRegion(const cv::Rect& region, cv::Rect* decoded) {
  if (!whole_.empty() || IsProgressiveJpeg(data_, size_)) {
    cv::Mat image = DecodeImage();
    *decoded = cv::Rect(0, 0, image.cols, image.rows);
    return image;
  }
  const auto t0 = Clock::now();
  cv::Mat image = DecodeBgrRegion(data_, size_, region, decoded);
  ++decodes_;
  width_ = image.cols;
  height_ = image.rows;
  decodeMs_ += MillisBetween(t0, Clock::now());
  return image;
}

ImageDecoder ImageJob::Decoder() {
  return [this](int minLongerSide, cv::Size* full) {
    cv::Mat image = DecodeImage(minLongerSide);
    if (full != nullptr) *full = cv::Size(width_, height_);
    return image;
  };
}

}  // namespace edgecv
