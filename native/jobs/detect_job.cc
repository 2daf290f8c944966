#include "jobs/detect_job.h"

#include "pool/worker_context.h"

namespace edgecv {
namespace {

std::vector<Face> DetectFaces(WorkerContext& ctx, const cv::Mat& image, cv::Size full, const DetectOptions& options,
                              StageTimings* timings) {
  if (!ctx.faceDetector) throw JobError(ErrorCode::kInternal, "engine has no face detector");
  return ctx.faceDetector->Detect(image, options, timings, full);
}

// A JPEG is decoded no larger than the detector needs (FaceDetector::NeededSide): 640x480 at half size, 1280x720
// at a quarter for a 192 or 256 px whole-image pass.
int FaceDecodeSide(const WorkerContext& ctx, const DetectOptions& options) {
  return ctx.faceDetector ? ctx.faceDetector->NeededSide(options) : 0;
}

// Pose and objects are decoded at full size (`full` is the image's size).
std::vector<DetectedObject> DetectObjects(WorkerContext& ctx, const cv::Mat& image, cv::Size, const ObjectCallOptions& options,
                                          StageTimings* timings) {
  ObjectDetector* detector = options.onPersonDetector ? ctx.personDetector.get() : ctx.objectDetector.get();
  if (!detector) throw JobError(ErrorCode::kInternal, options.onPersonDetector ? "engine has no person detector" : "engine has no object model");
  return detector->Detect(image, options.detect, timings);
}

// Objects asked of the detector when looking for people: a bound on its work, not a policy (the people among
// them are capped by maxPoses).
constexpr int kMaxPersonObjects = 1000;

// The person detector's and MoveNet's stages, each model's apart (timings.stages), and their sums in *timings.
void AddPoseStages(const StageTimings& person, const StageTimings& pose, StageTimings* timings) {
  timings->preprocessMs += person.preprocessMs + pose.preprocessMs;
  timings->inferenceMs += person.inferenceMs + pose.inferenceMs;
  timings->postprocessMs += person.postprocessMs + pose.postprocessMs;
  timings->runs += person.runs + pose.runs;
  timings->parts = {{"personPreprocessMs", person.preprocessMs}, {"personInferenceMs", person.inferenceMs},
                    {"personPostprocessMs", person.postprocessMs}, {"posePreprocessMs", pose.preprocessMs},
                    {"poseInferenceMs", pose.inferenceMs},         {"posePostprocessMs", pose.postprocessMs},
                    {"posePasses", static_cast<double>(pose.runs)}};
}

std::vector<Pose> DetectPoses(WorkerContext& ctx, const cv::Mat& image, cv::Size, const PoseOptions& options,
                              StageTimings* timings) {
  if (!ctx.poseEstimator) throw JobError(ErrorCode::kInternal, "engine has no pose model");
  ObjectDetector* finder = ctx.personDetector ? ctx.personDetector.get() : ctx.objectDetector.get();
  StageTimings person, pose;
  if (options.personClassId < 0 || !finder) {
    std::vector<Pose> poses = ctx.poseEstimator->Detect(image, options, &pose);
    AddPoseStages(person, pose, timings);
    return poses;
  }
  ObjectOptions find;
  find.scoreThreshold = options.personThreshold;
  find.maxObjects = kMaxPersonObjects;
  std::vector<Box> people;  // best first, as the detectors return them
  for (const DetectedObject& o : finder->Detect(image, find, &person)) {
    if (o.classId == options.personClassId && people.size() < static_cast<size_t>(options.maxPoses)) people.push_back(o.rect);
  }
  std::vector<Pose> poses = ctx.poseEstimator->DetectInBoxes(image, people, options, &pose);
  AddPoseStages(person, pose, timings);
  return poses;
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

const FaceDetectJob::Kind kFaceDetection{"faces", &DetectFaces, &FaceToJs, &FaceDecodeSide};
const PoseDetectJob::Kind kPoseDetection{"poses", &DetectPoses, &PoseToJs};
const ObjectDetectJob::Kind kObjectDetection{"objects", &DetectObjects, &ObjectToJs};

}  // namespace edgecv
