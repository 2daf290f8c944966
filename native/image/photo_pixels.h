// The photo at its own size for the crops cut from it (recognition's landmarks look, the embedder's crop, the
// sharpness, the stored crop), decoded only as far as they read: each asks for the region it reads first. A
// baseline JPEG then decodes those rows and columns only (image/jpeg_decoder.h); a later ask past them decodes
// again, their union. Where the photo is already decoded whole (a PNG, a small JPEG), nothing is decoded.
#pragma once

#include <functional>

#include <opencv2/core.hpp>

namespace edgecv {

class PhotoPixels {
 public:
  // The photo at its own size with at least `region`'s part inside it decoded; `decoded` receives that part.
  using RegionDecoder = std::function<cv::Mat(const cv::Rect& region, cv::Rect* decoded)>;

  // `whole`: the photo itself when it is already decoded whole (empty: not yet).
  PhotoPixels(RegionDecoder decode, cv::Mat whole);

  // The photo (its own size), with at least the part of `region` inside it holding the photo's pixels. The region
  // may reach past the photo; what it reads there is black as the crops' padding is.
  const cv::Mat& Covering(const cv::Rect& region);
  // The photo, every pixel decoded.
  const cv::Mat& Whole();

  // The part of the photo decoded so far.
  const cv::Rect& decoded() const { return decoded_; }

 private:
  RegionDecoder decode_;
  cv::Mat pixels_;
  cv::Rect decoded_;
};

}  // namespace edgecv
