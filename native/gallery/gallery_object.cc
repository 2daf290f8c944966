#include "gallery/gallery_object.h"

#include <cmath>
#include <string>
#include <vector>

#include "runtime/error_code.h"
#include "jobs/gallery_match_js.h"
#include "jobs/js_errors.h"

namespace edgecv {
namespace {

std::vector<int64_t> ReadIds(Napi::Env env, Napi::Value value) {
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    ThrowInvalid(env, "ids must be a Float64Array");
  }
  Napi::Float64Array array = value.As<Napi::Float64Array>();
  std::vector<int64_t> ids(array.ElementLength());
  for (size_t i = 0; i < ids.size(); ++i) {
    const double v = array[i];
    // Safe integers only: ids travel as JS numbers.
    if (!(std::floor(v) == v && std::fabs(v) <= 9007199254740991.0)) ThrowInvalid(env, "ids must be safe integers");
    ids[i] = static_cast<int64_t>(v);
  }
  return ids;
}

// Owned copies of one batch; `refs` point into them.
struct Batch {
  std::vector<int64_t> ids;
  std::vector<std::string> subjects;
  std::vector<float> embeddings;
  std::vector<GallerySampleRef> refs;
};

Batch ReadBatch(const Napi::CallbackInfo& info, int dim) {
  Napi::Env env = info.Env();
  Batch batch;
  batch.ids = ReadIds(env, info[0]);
  if (!info[1].IsArray()) ThrowInvalid(env, "subjects must be an array of strings");
  Napi::Array subjects = info[1].As<Napi::Array>();
  if (subjects.Length() != batch.ids.size()) ThrowInvalid(env, "subjects and ids differ in length");
  for (uint32_t i = 0; i < subjects.Length(); ++i) {
    Napi::Value s = subjects.Get(i);
    if (!s.IsString()) ThrowInvalid(env, "subjects must be an array of strings");
    batch.subjects.push_back(s.As<Napi::String>().Utf8Value());
  }
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    ThrowInvalid(env, "embeddings must be a Float32Array");
  }
  Napi::Float32Array embeddings = info[2].As<Napi::Float32Array>();
  if (embeddings.ElementLength() != batch.ids.size() * static_cast<size_t>(dim)) {
    ThrowInvalid(env, "embeddings must hold ids.length x " + std::to_string(dim) + " floats");
  }
  batch.embeddings.assign(embeddings.Data(), embeddings.Data() + embeddings.ElementLength());
  for (float v : batch.embeddings) {
    if (!std::isfinite(v)) ThrowInvalid(env, "embeddings must be finite");
  }
  batch.refs.reserve(batch.ids.size());
  for (size_t i = 0; i < batch.ids.size(); ++i) {
    batch.refs.push_back({batch.ids[i], &batch.subjects[i], batch.embeddings.data() + i * dim});
  }
  return batch;
}

}  // namespace

Napi::Function GalleryObject::Define(Napi::Env env) {
  return DefineClass(env, "Gallery",
                     {
                         InstanceMethod<&GalleryObject::Add>("add"),
                         InstanceMethod<&GalleryObject::Replace>("replace"),
                         InstanceMethod<&GalleryObject::Remove>("remove"),
                         InstanceMethod<&GalleryObject::BestOf>("bestOf"),
                         InstanceMethod<&GalleryObject::Size>("size"),
                         InstanceMethod<&GalleryObject::Dim>("dim"),
                     });
}

GalleryObject::GalleryObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<GalleryObject>(info) {
  Napi::Env env = info.Env();
  const double dim = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  // A safety bound on the row width (the host makes galleries of its model's embedding size).
  if (!(dim >= 1 && dim <= 65536 && std::floor(dim) == dim))
    ThrowInvalid(env, "gallery dimension must be an integer from 1 to 65536");
  index_ = std::make_shared<GalleryIndex>(static_cast<int>(dim));
}

Napi::Value GalleryObject::Add(const Napi::CallbackInfo& info) {
  Batch batch = ReadBatch(info, index_->dim());
  index_->Add(batch.refs);
  return info.Env().Undefined();
}

Napi::Value GalleryObject::Replace(const Napi::CallbackInfo& info) {
  Batch batch = ReadBatch(info, index_->dim());
  index_->Replace(batch.refs);
  return info.Env().Undefined();
}

Napi::Value GalleryObject::Remove(const Napi::CallbackInfo& info) {
  const std::vector<int64_t> ids = ReadIds(info.Env(), info[0]);
  return Napi::Number::New(info.Env(), static_cast<double>(index_->Remove(ids)));
}

Napi::Value GalleryObject::BestOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<int64_t> ids = ReadIds(env, info[0]);
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    ThrowInvalid(env, "query must be a Float32Array");
  }
  Napi::Float32Array query = info[1].As<Napi::Float32Array>();
  if (query.ElementLength() != static_cast<size_t>(index_->dim())) ThrowInvalid(env, "query has the wrong dimension");
  return GalleryMatchToJs(env, index_->BestOf(ids, query.Data()));
}

Napi::Value GalleryObject::Size(const Napi::CallbackInfo& info) {
  const auto snapshot = index_->Snapshot();
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("live", Napi::Number::New(info.Env(), static_cast<double>(snapshot->live())));
  out.Set("rows", Napi::Number::New(info.Env(), static_cast<double>(snapshot->rows())));
  return out;
}

Napi::Value GalleryObject::Dim(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), index_->dim()); }

}  // namespace edgecv
