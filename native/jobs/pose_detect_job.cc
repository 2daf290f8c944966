#include "jobs/pose_detect_job.h"

#include "bindings/timings_js.h"
#include "runtime/worker_context.h"

namespace edgecv {

PoseDetectJob::PoseDetectJob(Napi::Env env, Napi::Uint8Array bytes, const PoseOptions& options)
    : ImageJob(env, bytes), options_(options) {}

void PoseDetectJob::Execute(WorkerContext& ctx) {
  if (!ctx.poseEstimator) throw JobError(ErrorCode::kInternal, "engine has no pose model");
  const cv::Mat image = DecodeImage();
  const bool personCrops = options_.personClassId >= 0 && (ctx.yoloDetector || ctx.objectDetector);
  if (!personCrops) {
    poses_ = ctx.poseEstimator->Detect(image, options_, &timings_);
    return;
  }
  // Every object the detector finds at personThreshold: the people among them are capped by maxPoses below.
  ObjectOptions find;
  find.scoreThreshold = options_.personThreshold;
  find.maxObjects = kMaxObjects;
  const std::vector<DetectedObject> objects = ctx.yoloDetector ? ctx.yoloDetector->Detect(image, find, &timings_)
                                                               : ctx.objectDetector->Detect(image, find, &timings_);
  std::vector<Box> people;  // best first, as the detectors return them
  for (const DetectedObject& o : objects) {
    if (o.classId == options_.personClassId && people.size() < static_cast<size_t>(options_.maxPoses)) people.push_back(o.rect);
  }
  poses_ = ctx.poseEstimator->DetectInBoxes(image, people, options_, &timings_);
}

Napi::Value PoseDetectJob::Result(Napi::Env env) {
  Napi::Array poses = Napi::Array::New(env, poses_.size());
  for (size_t i = 0; i < poses_.size(); ++i) {
    const Pose& p = poses_[i];
    Napi::Array box = Napi::Array::New(env, p.box.size());
    for (size_t k = 0; k < p.box.size(); ++k) box.Set(k, Napi::Number::New(env, p.box[k]));
    // Flat [x0, y0, score0, x1, ...]: one array instead of 17 objects per person.
    Napi::Array keypoints = Napi::Array::New(env, 3 * p.keypoints.size());
    for (size_t k = 0; k < p.keypoints.size(); ++k) {
      keypoints.Set(3 * k, Napi::Number::New(env, p.keypoints[k].x));
      keypoints.Set(3 * k + 1, Napi::Number::New(env, p.keypoints[k].y));
      keypoints.Set(3 * k + 2, Napi::Number::New(env, p.keypoints[k].score));
    }
    Napi::Object pose = Napi::Object::New(env);
    pose.Set("score", Napi::Number::New(env, p.score));
    pose.Set("box", box);
    pose.Set("keypoints", keypoints);
    poses.Set(i, pose);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("width", Napi::Number::New(env, width()));
  result.Set("height", Napi::Number::New(env, height()));
  result.Set("poses", poses);
  result.Set("timings", TimingsToJs(env, queueMs(), decodeMs(), timings_));
  return result;
}

}  // namespace edgecv
