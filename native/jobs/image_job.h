// A Job whose input is one encoded image: the bytes are pinned (not copied) on the
// JS thread and decoded, timed, on the worker. Face, pose, object and embedding jobs share it.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include <opencv2/core.hpp>

#include "pool/job.h"

namespace edgecv {

// Worker thread: the job's image as 8-bit BGR, its longer side at least minLongerSide where a JPEG can be decoded
// smaller (0: whole); `full` (optional) receives the image's own size. It may be called again for a larger copy.
using ImageDecoder = std::function<cv::Mat(int minLongerSide, cv::Size* full)>;

class ImageJob : public Job {
 protected:
  // JS thread. `bytes` stays pinned until the job is settled.
  ImageJob(Napi::Env env, Napi::Uint8Array bytes);

  // Worker thread: decodes to BGR (JobError INVALID_IMAGE on failure) and records width() and height() (the
  // image's own size); decodeMs() sums every call's time. minLongerSide > 0: a JPEG may be decoded smaller, its
  // longer side no shorter than that (DecodeBgr); what comes back is then smaller than width() x height().
  // A progressive JPEG is decoded once, whole (a smaller decode would cost as much), and kept: each call gets
  // it, or a copy shrunk (area) to the size DCT scaling would give; decodes() counts the real decodes.
  cv::Mat DecodeImage(int minLongerSide = 0);
  // The image at its own size with at least `region`'s part inside it decoded (DecodeBgrRegion: a baseline JPEG
  // decodes that part only, the rest black); the kept whole image of a progressive JPEG, when there is one.
  // `decoded` receives the part that holds the image's pixels. Timed and counted as DecodeImage.
  cv::Mat DecodeImageRegion(const cv::Rect& region, cv::Rect* decoded);
  // DecodeImage() as an ImageDecoder.
  ImageDecoder Decoder();

  double decodeMs() const { return decodeMs_; }
  int decodes() const { return decodes_; }
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  const uint8_t* data_;
  size_t size_;
  double decodeMs_ = 0;
  int decodes_ = 0;
  // The whole image of a progressive JPEG, once decoded (empty otherwise).
  cv::Mat whole_;
  int width_ = 0;
  int height_ = 0;
};

}  // namespace edgecv
