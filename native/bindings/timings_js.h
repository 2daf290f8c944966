// The `timings` object of a detection result, on the JS thread.
#pragma once

#include <napi.h>

#include "runtime/stage_timings.h"

namespace edgecv {

Napi::Object TimingsToJs(Napi::Env env, double queueMs, double decodeMs, const StageTimings& stages);

}  // namespace edgecv
