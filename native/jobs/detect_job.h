// detectFaces(), detectPoses(), detectObjects(): one job type. Decode and run the worker's model on a worker;
// on the JS thread, { width, height, <faces|poses|objects>: [...], timings }. A kind names what differs.
#pragma once

#include <napi.h>

#include <vector>

#include <opencv2/core.hpp>

#include "jobs/js_values.h"
#include "jobs/image_job.h"
#include "models/face_detector.h"
#include "models/object_detector.h"
#include "models/pose_estimator.h"
#include "runtime/stage_timings.h"

namespace edgecv {

template <typename Options, typename Item>
class DetectJob : public ImageJob {
 public:
  struct Kind {
    const char* key;  // the result's list: "faces", "poses", "objects"
    // Worker thread: the items found by the worker's model (JobError when it has none) in the image, which it
    // decodes as small as the model allows, in the coordinates of the image's own size.
    std::vector<Item> (*detect)(WorkerContext& ctx, const ImageDecoder& decode, const Options& options,
                                StageTimings* timings);
    // JS thread: one item of the list.
    Napi::Value (*toJs)(Napi::Env env, const Item& item);
  };

  // JS thread. `bytes` is pinned, not copied.
  DetectJob(Napi::Env env, Napi::Uint8Array bytes, const Options& options, const Kind& kind)
      : ImageJob(env, bytes), options_(options), kind_(kind) {}

  void Execute(WorkerContext& ctx) override {
    items_ = kind_.detect(ctx, Decoder(), options_, &timings_);
    // A job that reports its stages (pose) also says how often its image was decoded: a progressive JPEG once.
    if (!timings_.parts.empty()) timings_.parts.emplace_back("decodes", static_cast<double>(decodes()));
  }

  Napi::Value Result(Napi::Env env) override {
    Napi::Array items = Napi::Array::New(env, items_.size());
    for (size_t i = 0; i < items_.size(); ++i) items.Set(static_cast<uint32_t>(i), kind_.toJs(env, items_[i]));
    Napi::Object result = Napi::Object::New(env);
    result.Set("width", Napi::Number::New(env, width()));
    result.Set("height", Napi::Number::New(env, height()));
    result.Set(kind_.key, items);
    result.Set("timings", TimingsToJs(env, queueMs(), decodeMs(), timings_));
    return result;
  }

 private:
  const Options options_;
  const Kind& kind_;  // one of the constants below
  std::vector<Item> items_;
  StageTimings timings_;
};

using FaceDetectJob = DetectJob<DetectOptions, Face>;
using PoseDetectJob = DetectJob<PoseOptions, Pose>;
using ObjectDetectJob = DetectJob<ObjectCallOptions, DetectedObject>;

extern const FaceDetectJob::Kind kFaceDetection;
extern const PoseDetectJob::Kind kPoseDetection;
extern const ObjectDetectJob::Kind kObjectDetection;

// { rect, score, keypoints }: a face as detectFaces() and embedFace() return it.
Napi::Value FaceToJs(Napi::Env env, const Face& face);

}  // namespace edgecv
