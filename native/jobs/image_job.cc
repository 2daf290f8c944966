#include "jobs/image_job.h"

#include "image/image.h"

namespace edgecv {

ImageJob::ImageJob(Napi::Env env, Napi::Uint8Array bytes) : Job(env), data_(bytes.Data()), size_(bytes.ByteLength()) {
  Pin(bytes);
}

cv::Mat ImageJob::DecodeImage(int minLongerSide) {
  const auto t0 = Clock::now();
  cv::Size full;
  cv::Mat image = DecodeBgr(data_, size_, minLongerSide, &full);
  decodeMs_ += MillisBetween(t0, Clock::now());
  width_ = full.width;
  height_ = full.height;
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
