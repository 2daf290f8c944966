#include "face_detect_job.h"

#include "image.h"
#include "worker_context.h"

namespace edgecv {

FaceDetectJob::FaceDetectJob(Napi::Env env, Napi::Uint8Array bytes, const DetectOptions& options)
    : Job(env), data_(bytes.Data()), size_(bytes.ByteLength()), options_(options) {
  Pin(bytes);
}

void FaceDetectJob::Execute(WorkerContext& ctx) {
  if (!ctx.faceDetector) throw JobError(ErrorCode::kInternal, "engine has no face detector");
  const auto t0 = Clock::now();
  const cv::Mat image = DecodeBgr(data_, size_);
  decodeMs_ = MillisBetween(t0, Clock::now());
  width_ = image.cols;
  height_ = image.rows;
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
  Napi::Object timings = Napi::Object::New(env);
  timings.Set("queueMs", Napi::Number::New(env, queueMs()));
  timings.Set("decodeMs", Napi::Number::New(env, decodeMs_));
  timings.Set("preprocessMs", Napi::Number::New(env, timings_.preprocessMs));
  timings.Set("inferenceMs", Napi::Number::New(env, timings_.inferenceMs));
  timings.Set("postprocessMs", Napi::Number::New(env, timings_.postprocessMs));

  Napi::Object result = Napi::Object::New(env);
  result.Set("width", Napi::Number::New(env, width_));
  result.Set("height", Napi::Number::New(env, height_));
  result.Set("faces", faces);
  result.Set("timings", timings);
  return result;
}

}  // namespace edgecv
