#include "jobs/object_detect_job.h"

#include "bindings/timings_js.h"
#include "runtime/worker_context.h"

namespace edgecv {

ObjectDetectJob::ObjectDetectJob(Napi::Env env, Napi::Uint8Array bytes, const ObjectOptions& options)
    : ImageJob(env, bytes), options_(options) {}

void ObjectDetectJob::Execute(WorkerContext& ctx) {
  if (!ctx.objectDetector && !ctx.yoloDetector) throw JobError(ErrorCode::kInternal, "engine has no object model");
  const cv::Mat image = DecodeImage();
  objects_ = ctx.yoloDetector ? ctx.yoloDetector->Detect(image, options_, &timings_)
                              : ctx.objectDetector->Detect(image, options_, &timings_);
}

Napi::Value ObjectDetectJob::Result(Napi::Env env) {
  Napi::Array objects = Napi::Array::New(env, objects_.size());
  for (size_t i = 0; i < objects_.size(); ++i) {
    const DetectedObject& o = objects_[i];
    Napi::Array rect = Napi::Array::New(env, o.rect.size());
    for (size_t k = 0; k < o.rect.size(); ++k) rect.Set(k, Napi::Number::New(env, o.rect[k]));
    Napi::Object object = Napi::Object::New(env);
    object.Set("rect", rect);
    object.Set("classId", Napi::Number::New(env, o.classId));
    object.Set("score", Napi::Number::New(env, o.score));
    objects.Set(i, object);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("width", Napi::Number::New(env, width()));
  result.Set("height", Napi::Number::New(env, height()));
  result.Set("objects", objects);
  result.Set("timings", TimingsToJs(env, queueMs(), decodeMs(), timings_));
  return result;
}

}  // namespace edgecv
