// Errors on the JS thread, all with a `.code` (ErrorCodeName): thrown argument errors (a TypeError with
// code INVALID_ARGUMENT, the backstop behind the TypeScript checks), coded rejections, and the one wrapper
// that keeps every exception of an engine method from crossing into N-API.
#pragma once

#include <napi.h>

#include <exception>
#include <string>

#include "runtime/error_code.h"

namespace edgecv {

// `new Error(message)` with `.code` set.
Napi::Error MakeCodedError(Napi::Env env, ErrorCode code, const std::string& message);

[[noreturn]] inline void ThrowCoded(Napi::Env env, ErrorCode code, const std::string& message) {
  throw MakeCodedError(env, code, message);
}

[[noreturn]] inline void ThrowInvalid(Napi::Env env, const std::string& message) {
  Napi::Error error = Napi::TypeError::New(env, message);
  error.Set("code", Napi::String::New(env, ErrorCodeName(ErrorCode::kInvalidArgument)));
  throw error;
}

inline Napi::Promise RejectedPromise(Napi::Env env, Napi::Value error) {
  auto deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(error);
  return deferred.Promise();
}

// Runs `body` (it returns the call's promise); an exception becomes a rejected promise instead: its own
// error when it is a JS error, INTERNAL otherwise.
template <typename Body>
Napi::Value PromiseOrRejection(Napi::Env env, Body&& body) {
  try {
    return body();
  } catch (const Napi::Error& e) {
    return RejectedPromise(env, e.Value());
  } catch (const std::exception& e) {
    return RejectedPromise(env, MakeCodedError(env, ErrorCode::kInternal, e.what()).Value());
  }
}

}  // namespace edgecv
