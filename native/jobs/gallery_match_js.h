// GalleryMatch -> JS value ({id, subject, cosine}, or null for an empty gallery).
#pragma once

#include <napi.h>

#include "gallery/gallery_index.h"

namespace edgecv {

inline Napi::Value GalleryMatchToJs(Napi::Env env, const GalleryMatch& match) {
  if (!match.found) return env.Null();
  Napi::Object out = Napi::Object::New(env);
  out.Set("id", Napi::Number::New(env, static_cast<double>(match.id)));
  out.Set("subject", Napi::String::New(env, match.subject));
  out.Set("cosine", Napi::Number::New(env, match.cosine));
  return out;
}

}  // namespace edgecv
