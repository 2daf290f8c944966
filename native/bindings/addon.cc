// Module entry: createEngine(options) -> NativeEngine (native_engine.h), Gallery, and build facts.
//
// Flow of one request (sharp's pattern): the JS thread builds a Job (pinning the
// input Buffer), the pool runs it on one of its own std::threads, and a
// thread-safe function brings it back to the JS thread, where the promise is
// settled and the pin released. No exception crosses into N-API: every entry
// point catches and turns errors into JS errors / rejections with a `.code`.
#include <napi.h>

#include <memory>

#include <opencv2/core/version.hpp>

#include "bindings/addon_data.h"
#include "bindings/native_engine.h"
#include "gallery/gallery_object.h"
#include "runtime/onnxruntime_library.h"

namespace edgecv {
namespace {

Napi::Value CreateEngine(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* data = env.GetInstanceData<AddonData>();
  return data->engineConstructor.New({info[0]});  // constructor errors propagate as JS exceptions
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto data = std::make_unique<AddonData>();
  data->engineConstructor = Napi::Persistent(NativeEngine::Define(env));
  Napi::Function gallery = GalleryObject::Define(env);
  data->galleryConstructor = Napi::Persistent(gallery);
  env.SetInstanceData(data.release());  // owned by the env from here on (deleted at teardown)
  exports.Set("createEngine", Napi::Function::New(env, CreateEngine, "createEngine"));
  exports.Set("Gallery", gallery);
  exports.Set("opencvVersion", Napi::String::New(env, CV_VERSION));
  exports.Set("onnxRuntimeCompiledIn", Napi::Boolean::New(env, OnnxRuntimeCompiledIn()));
  return exports;
}

}  // namespace
}  // namespace edgecv

// NODE_API_MODULE pastes the name into an identifier, so it needs an unqualified one.
static Napi::Object InitEdgecv(Napi::Env env, Napi::Object exports) { return edgecv::Init(env, exports); }
NODE_API_MODULE(edgecv, InitEdgecv)
