#include "pool/job.h"

#include <exception>

#include "jobs/js_errors.h"  // MakeCodedError

namespace edgecv {

namespace {

// A handle scope that never throws (Napi::HandleScope does): without one the handles of this settle simply live
// in the caller's scope.
class HandleScope {
 public:
  explicit HandleScope(napi_env env) : env_(env) {
    if (napi_open_handle_scope(env_, &scope_) != napi_ok) scope_ = nullptr;
  }
  ~HandleScope() {
    if (scope_) napi_close_handle_scope(env_, scope_);
  }
  HandleScope(const HandleScope&) = delete;
  HandleScope& operator=(const HandleScope&) = delete;

 private:
  napi_env env_;
  napi_handle_scope scope_ = nullptr;
};

void ClearPendingException(napi_env env) {
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
    napi_value ignored;
    napi_get_and_clear_last_exception(env, &ignored);
  }
}

}  // namespace

Job::Job(Napi::Env env) : env_(env) {
  if (napi_create_promise(env, &deferred_, &promise_) != napi_ok)
    throw Napi::Error::New(env, "could not create a promise");
}

void Job::Pin(Napi::Value value) { pins_.push_back(Napi::Reference<Napi::Value>::New(value, 1)); }

void Job::Run(WorkerContext& ctx) noexcept {
  try {
    Execute(ctx);
  } catch (const JobError& e) {
    code_ = e.code();
    message_ = e.what();
  } catch (const std::exception& e) {  // cv::Exception derives from std::exception
    code_ = ErrorCode::kInternal;
    message_ = e.what();
  } catch (...) {
    code_ = ErrorCode::kInternal;
    message_ = "unknown native exception";
  }
}

void Job::Reject(Napi::Env env, ErrorCode code, const std::string& message) noexcept {
  HandleScope scope(env);
  ClearPendingException(env);  // a pending exception makes every N-API call below fail
  napi_value reason = nullptr;
  try {
    reason = MakeCodedError(env, code, message).Value();
  } catch (...) {
    // The Error could not be built (no memory, a throwing getter...): reject with the bare message, which needs
    // no property set, or with undefined.
    ClearPendingException(env);
    if (napi_create_string_utf8(env, message.data(), message.size(), &reason) != napi_ok)
      napi_get_undefined(env, &reason);
  }
  // napi_reject_deferred only fails before it consumes the deferred (pending exception, cleared above), so one
  // call settles the promise.
  napi_reject_deferred(env, deferred_, reason);
}

void Job::Settle(Napi::Env env) noexcept {
  if (failed()) {
    Reject(env, code_, message_);
    return;
  }
  HandleScope scope(env);
  napi_value value = nullptr;
  try {
    value = Result(env);
  } catch (const std::exception& e) {
    Reject(env, ErrorCode::kInternal, std::string("result conversion failed: ") + e.what());
    return;
  } catch (...) {
    Reject(env, ErrorCode::kInternal, "result conversion failed");
    return;
  }
  ClearPendingException(env);
  napi_resolve_deferred(env, deferred_, value);
}

void Job::Abandon() noexcept {
  for (auto& pin : pins_) pin.SuppressDestruct();
}

}  // namespace edgecv
