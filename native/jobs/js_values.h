// Plain values to JS on the JS thread: number lists and the `timings` object of a detection result.
#pragma once

#include <napi.h>

#include <cstdint>

#include "runtime/stage_timings.h"

namespace edgecv {

// [a, b, c] of any container of numbers (rects, boxes, keypoints).
template <typename Numbers>
Napi::Array NumberArray(Napi::Env env, const Numbers& values) {
  Napi::Array out = Napi::Array::New(env, values.size());
  uint32_t i = 0;
  for (const auto v : values) out.Set(i++, Napi::Number::New(env, v));
  return out;
}

Napi::Object TimingsToJs(Napi::Env env, double queueMs, double decodeMs, const StageTimings& stages);

}  // namespace edgecv
