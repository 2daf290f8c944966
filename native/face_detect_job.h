// detectFaces(): decode + FaceDetector::Detect on a worker, result object on the JS thread.
#pragma once

#include <napi.h>

#include <vector>

#include "face_detector.h"
#include "job.h"

namespace edgecv {

class FaceDetectJob : public Job {
 public:
  // JS thread. `bytes` is pinned, not copied.
  FaceDetectJob(Napi::Env env, Napi::Uint8Array bytes, const DetectOptions& options);

  void Execute(WorkerContext& ctx) override;
  Napi::Value Result(Napi::Env env) override;

 private:
  const uint8_t* data_;
  size_t size_;
  DetectOptions options_;

  int width_ = 0;
  int height_ = 0;
  std::vector<Face> faces_;
  double decodeMs_ = 0;
  StageTimings timings_;
};

}  // namespace edgecv
