// The scaffold every whole-image model shares: letterbox the image into the model's square input, run it, and
// decode the outputs, adding each stage's time to the call's StageTimings. The model classes keep only their
// own decoding.
#pragma once

#include <vector>

#include <opencv2/core.hpp>

#include "runtime/job.h"  // Clock, MillisBetween
#include "models/letterbox.h"
#include "runtime/inference_model.h"
#include "runtime/stage_timings.h"

namespace edgecv {

struct LetterboxInput {
  int size = 0;        // square input side
  double mean = 0;     // input = (pixel - mean) * scale
  double scale = 1;
  bool swapRB = true;  // decoded images are BGR; true feeds RGB
  double padValue = 0;
};

// decode(outputs, letterbox) -> result
template <typename Decode>
auto RunLetterboxed(const cv::Mat& bgr, const LetterboxInput& input, InferenceModel& model, StageTimings* timings,
                    Decode&& decode) {
  const auto t0 = Clock::now();
  cv::Mat blob;
  const Letterbox box = LetterboxBlob(bgr, input.size, input.mean, input.scale, input.swapRB, &blob, input.padValue);
  const auto t1 = Clock::now();
  const std::vector<cv::Mat> outputs = model.Run(blob);
  const auto t2 = Clock::now();
  auto result = decode(outputs, box);
  const auto t3 = Clock::now();
  timings->preprocessMs += MillisBetween(t0, t1);
  timings->inferenceMs += MillisBetween(t1, t2);
  timings->postprocessMs += MillisBetween(t2, t3);
  return result;
}

}  // namespace edgecv
