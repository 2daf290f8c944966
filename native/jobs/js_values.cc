#include "jobs/js_values.h"

namespace edgecv {

Napi::Object TimingsToJs(Napi::Env env, double queueMs, double decodeMs, const StageTimings& stages) {
  Napi::Object timings = Napi::Object::New(env);
  timings.Set("queueMs", Napi::Number::New(env, queueMs));
  timings.Set("decodeMs", Napi::Number::New(env, decodeMs));
  timings.Set("preprocessMs", Napi::Number::New(env, stages.preprocessMs));
  timings.Set("inferenceMs", Napi::Number::New(env, stages.inferenceMs));
  timings.Set("postprocessMs", Napi::Number::New(env, stages.postprocessMs));
  if (!stages.parts.empty()) {
    Napi::Object parts = Napi::Object::New(env);
    for (const auto& [name, value] : stages.parts) parts.Set(name, Napi::Number::New(env, value));
    timings.Set("stages", parts);
  }
  return timings;
}

}  // namespace edgecv
