#include "jobs/face_detect_job.h"

#include "bindings/timings_js.h"
#include "runtime/worker_context.h"

namespace edgecv {

FaceDetectJob::FaceDetectJob(Napi::Env env, Napi::Uint8Array bytes, const DetectOptions& options)
    : ImageJob(env, bytes), options_(options) {}

void FaceDetectJob::Execute(WorkerContext& ctx) {
  if (!ctx.faceDetector) throw JobError(ErrorCode::kInternal, "engine has no face detector");
  const cv::Mat image = DecodeImage();
  faces_ = ctx.faceDetector->Detect(image, options_, &timings_);
}

Napi::Value FaceDetectJob::Result(Napi::Env env) {
  Napi::Array faces = Napi::Array::New(env, faces_.size());
  for (size_t i = 0; i < faces_.size(); ++i) {
    const Face& f = faces_[i];
    Napi::Array rect = Napi::Array::New(env, f.rect.size());
    for (size_t k = 0; k < f.rect.size(); ++k) rect.Set(k, Napi::Number::New(env, f.rect[k]));
    Napi::Array keypoints = Napi::Array::New(env, f.keypoints.size());
    for (size_t k = 0; k < f.keypoints.size(); ++k) keypoints.Set(k, Napi::Number::New(env, f.keypoints[k]));
    Napi::Object face = Napi::Object::New(env);
    face.Set("rect", rect);
    face.Set("score", Napi::Number::New(env, f.score));
    face.Set("keypoints", keypoints);
    faces.Set(i, face);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("width", Napi::Number::New(env, width()));
  result.Set("height", Napi::Number::New(env, height()));
  result.Set("faces", faces);
  result.Set("timings", TimingsToJs(env, queueMs(), decodeMs(), timings_));
  return result;
}

}  // namespace edgecv
