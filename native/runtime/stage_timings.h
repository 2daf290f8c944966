// Per-stage durations of one model call, and the one scaffold every model times its stages with.
#pragma once

#include <chrono>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>

#include "runtime/inference_model.h"

namespace edgecv {

using Clock = std::chrono::steady_clock;

inline double MillisBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

struct StageTimings {
  double preprocessMs = 0;
  double inferenceMs = 0;
  double postprocessMs = 0;
  int runs = 0;  // model runs (RunStaged calls) these stages add up
  // A call made of several models (pose behind a person detector) names each one's stages here, reported as
  // timings.stages ("personInferenceMs": ...): the three sums above do not say which model took the time.
  std::vector<std::pair<const char*, double>> parts;
};

// preprocess() -> blob, model.Run(blob), decode(outputs) -> result, adding each stage's time to *timings.
// The models keep only their own preprocessing and decoding.
template <typename Preprocess, typename Decode>
auto RunStaged(InferenceModel& model, StageTimings* timings, Preprocess&& preprocess, Decode&& decode) {
  const auto t0 = Clock::now();
  const cv::Mat blob = preprocess();
  const auto t1 = Clock::now();
  const std::vector<cv::Mat> outputs = model.Run(blob);
  const auto t2 = Clock::now();
  auto result = decode(outputs);
  const auto t3 = Clock::now();
  timings->preprocessMs += MillisBetween(t0, t1);
  timings->inferenceMs += MillisBetween(t1, t2);
  timings->postprocessMs += MillisBetween(t2, t3);
  ++timings->runs;
  return result;
}

}  // namespace edgecv
