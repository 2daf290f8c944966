// detectPoses(): decode + PoseEstimator::Detect on a worker, result object on the JS thread.
#pragma once

#include <napi.h>

#include <vector>

#include "jobs/image_job.h"
#include "models/pose_estimator.h"

namespace edgecv {

class PoseDetectJob : public ImageJob {
 public:
  // JS thread. `bytes` is pinned, not copied.
  PoseDetectJob(Napi::Env env, Napi::Uint8Array bytes, const PoseOptions& options);

  void Execute(WorkerContext& ctx) override;
  Napi::Value Result(Napi::Env env) override;

 private:
  // Objects asked of the detector when looking for people (a bound on its work, not a policy).
  static constexpr int kMaxObjects = 1000;
  PoseOptions options_;

  std::vector<Pose> poses_;
  StageTimings timings_;
};

}  // namespace edgecv
