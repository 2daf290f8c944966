// detectPoses(): decode + PoseEstimator::Detect on a worker, result object on the JS thread.
#pragma once

#include <napi.h>

#include <vector>

#include "job.h"
#include "pose_estimator.h"

namespace edgecv {

class PoseDetectJob : public Job {
 public:
  // JS thread. `bytes` is pinned, not copied.
  PoseDetectJob(Napi::Env env, Napi::Uint8Array bytes, const PoseOptions& options);

  void Execute(WorkerContext& ctx) override;
  Napi::Value Result(Napi::Env env) override;

 private:
  const uint8_t* data_;
  size_t size_;
  PoseOptions options_;

  int width_ = 0;
  int height_ = 0;
  std::vector<Pose> poses_;
  double decodeMs_ = 0;
  StageTimings timings_;
};

}  // namespace edgecv
