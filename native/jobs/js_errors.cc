#include "jobs/js_errors.h"

namespace edgecv {

Napi::Error MakeCodedError(Napi::Env env, ErrorCode code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, ErrorCodeName(code)));
  return error;
}

}  // namespace edgecv
