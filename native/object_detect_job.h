// detectObjects(): decode + ObjectDetector::Detect on a worker, result object on the JS thread.
#pragma once

#include <napi.h>

#include <vector>

#include "job.h"
#include "object_detector.h"

namespace edgecv {

class ObjectDetectJob : public Job {
 public:
  // JS thread. `bytes` is pinned, not copied.
  ObjectDetectJob(Napi::Env env, Napi::Uint8Array bytes, const ObjectOptions& options);

  void Execute(WorkerContext& ctx) override;
  Napi::Value Result(Napi::Env env) override;

 private:
  const uint8_t* data_;
  size_t size_;
  ObjectOptions options_;

  int width_ = 0;
  int height_ = 0;
  std::vector<DetectedObject> objects_;
  double decodeMs_ = 0;
  StageTimings timings_;
};

}  // namespace edgecv
