// Argument errors thrown on the JS thread: a TypeError with .code = "INVALID_ARGUMENT",
// the backstop behind the TypeScript checks (src/engine.ts validates first).
#pragma once

#include <napi.h>

#include <string>

#include "runtime/error_code.h"

namespace edgecv {

[[noreturn]] inline void ThrowInvalid(Napi::Env env, const std::string& message) {
  Napi::Error error = Napi::TypeError::New(env, message);
  error.Set("code", Napi::String::New(env, ErrorCodeName(ErrorCode::kInvalidArgument)));
  throw error;
}

}  // namespace edgecv
