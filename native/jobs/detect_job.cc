#include "jobs/detect_job.h"

#include "pipelines/detect_poses.h"
#include "pipelines/rotated_face_pass.h"
#include "pool/worker_context.h"

namespace edgecv {
namespace {

// A JPEG is decoded no larger than the detector needs (FaceDetector::NeededSide): 640x480 at half size, 1280x720
// at a quarter for a 192 or 256 px whole-image pass.
std::vector<Face> FacesOf(WorkerContext& ctx, const ImageDecoder& decode, const DetectOptions& options,
                          StageTimings* timings) {
  if (!ctx.faceDetector) throw JobError(ErrorCode::kInternal, "engine has no face detector");
  cv::Size full;
  const cv::Mat image = decode(ctx.faceDetector->NeededSide(options), &full);
  return DetectFaces(*ctx.faceDetector, image, options, timings, full);
}

// Objects are decoded at full size: decoded at half size, the labelled set lost a box (docs/performance.md).
std::vector<DetectedObject> DetectObjects(WorkerContext& ctx, const ImageDecoder& decode,
                                          const ObjectCallOptions& options, StageTimings* timings) {
  ObjectDetector* detector = options.onPersonDetector ? ctx.personDetector.get() : ctx.objectDetector.get();
  if (!detector)
    throw JobError(ErrorCode::kInternal,
                   options.onPersonDetector ? "engine has no person detector" : "engine has no object model");
  return detector->Detect(decode(0, nullptr), options.detect, timings);
}

Napi::Value PoseToJs(Napi::Env env, const Pose& p) {
  // Flat [x0, y0, score0, x1, ...]: one array instead of 17 objects per person.
  Napi::Array keypoints = Napi::Array::New(env, 3 * p.keypoints.size());
  for (size_t k = 0; k < p.keypoints.size(); ++k) {
    keypoints.Set(3 * k, Napi::Number::New(env, p.keypoints[k].x));
    keypoints.Set(3 * k + 1, Napi::Number::New(env, p.keypoints[k].y));
    keypoints.Set(3 * k + 2, Napi::Number::New(env, p.keypoints[k].score));
  }
  Napi::Object pose = Napi::Object::New(env);
  pose.Set("score", Napi::Number::New(env, p.score));
  pose.Set("box", NumberArray(env, p.box));
  pose.Set("keypoints", keypoints);
  return pose;
}

Napi::Value ObjectToJs(Napi::Env env, const DetectedObject& o) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("rect", NumberArray(env, o.rect));
  object.Set("classId", Napi::Number::New(env, o.classId));
  object.Set("score", Napi::Number::New(env, o.score));
  return object;
}

}  // namespace

Napi::Value FaceToJs(Napi::Env env, const Face& f) {
  Napi::Object face = Napi::Object::New(env);
  face.Set("rect", NumberArray(env, f.rect));
  face.Set("score", Napi::Number::New(env, f.score));
  face.Set("keypoints", NumberArray(env, f.keypoints));
  return face;
}

const FaceDetectJob::Kind kFaceDetection{"faces", &FacesOf, &FaceToJs};
const PoseDetectJob::Kind kPoseDetection{"poses", &DetectPoses, &PoseToJs};
const ObjectDetectJob::Kind kObjectDetection{"objects", &DetectObjects, &ObjectToJs};

}  // namespace edgecv
