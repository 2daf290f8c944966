// detectFaces(): decode + FaceDetector::Detect on a worker, result object on the JS thread.
#pragma once

#include <napi.h>

#include <vector>

#include "models/face_detector.h"
#include "jobs/image_job.h"

namespace edgecv {

class FaceDetectJob : public ImageJob {
 public:
  // JS thread. `bytes` is pinned, not copied.
  FaceDetectJob(Napi::Env env, Napi::Uint8Array bytes, const DetectOptions& options);

  void Execute(WorkerContext& ctx) override;
  Napi::Value Result(Napi::Env env) override;

 private:
  DetectOptions options_;

  std::vector<Face> faces_;
  StageTimings timings_;
};

}  // namespace edgecv
