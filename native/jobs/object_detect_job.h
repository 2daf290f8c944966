// detectObjects(): decode + the worker's object model (YoloDetector or centernet's ObjectDetector) on a worker, result object on the JS thread.
#pragma once

#include <napi.h>

#include <vector>

#include "jobs/image_job.h"
#include "models/object_detector.h"

namespace edgecv {

class ObjectDetectJob : public ImageJob {
 public:
  // JS thread. `bytes` is pinned, not copied.
  ObjectDetectJob(Napi::Env env, Napi::Uint8Array bytes, const ObjectOptions& options);

  void Execute(WorkerContext& ctx) override;
  Napi::Value Result(Napi::Env env) override;

 private:
  ObjectOptions options_;

  std::vector<DetectedObject> objects_;
  StageTimings timings_;
};

}  // namespace edgecv
