#include "runtime/job.h"

#include <exception>

namespace edgecv {

Job::Job(Napi::Env env) : deferred_(Napi::Promise::Deferred::New(env)) {}

void Job::Pin(Napi::Value value) {
  pins_.push_back(Napi::Reference<Napi::Value>::New(value, 1));
}

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

Napi::Error MakeCodedError(Napi::Env env, ErrorCode code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, ErrorCodeName(code)));
  return error;
}

void Job::Reject(Napi::Env env, ErrorCode code, const std::string& message) noexcept {
  try {
    Napi::HandleScope scope(env);
    deferred_.Reject(MakeCodedError(env, code, message).Value());
  } catch (...) {
    // Nothing sensible left to do: the promise stays pending rather than the
    // exception crossing into N-API.
  }
}

void Job::Settle(Napi::Env env) noexcept {
  if (failed()) {
    Reject(env, code_, message_);
    return;
  }
  try {
    Napi::HandleScope scope(env);
    deferred_.Resolve(Result(env));
  } catch (const std::exception& e) {
    Reject(env, ErrorCode::kInternal, std::string("result conversion failed: ") + e.what());
  } catch (...) {
    Reject(env, ErrorCode::kInternal, "result conversion failed");
  }
}

void Job::Abandon() noexcept {
  for (auto& pin : pins_) pin.SuppressDestruct();
}

}  // namespace edgecv
