#include "jobs/image_job.h"

#include "jobs/image.h"

namespace edgecv {

ImageJob::ImageJob(Napi::Env env, Napi::Uint8Array bytes) : Job(env), data_(bytes.Data()), size_(bytes.ByteLength()) {
  Pin(bytes);
}

cv::Mat ImageJob::DecodeImage() {
  const auto t0 = Clock::now();
  cv::Mat image = DecodeBgr(data_, size_);
  decodeMs_ = MillisBetween(t0, Clock::now());
  width_ = image.cols;
  height_ = image.rows;
  return image;
}

}  // namespace edgecv
