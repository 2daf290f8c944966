// A Job is the "baton" of the sharp pattern: a plain C++ object created on the JS
// thread, executed on one of the pool's worker threads, and settled (promise
// resolved/rejected) back on the JS thread.
//
// Thread rules:
//   - constructor, Pin(), Settle(), Reject(), Result(): JS thread only.
//   - Execute()/Run(): worker thread only; must not touch any Napi value.
//   - destruction: JS thread (it releases the pins), except through Abandon().
#pragma once

#include <napi.h>

#include <string>
#include <vector>

#include "runtime/error_code.h"
#include "runtime/stage_timings.h"  // Clock, MillisBetween

namespace edgecv {

struct WorkerContext;

class Job {
 public:
  explicit Job(Napi::Env env);
  virtual ~Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Worker thread. Throw JobError for a specific code; any other exception
  // (cv::Exception included) becomes INTERNAL.
  virtual void Execute(WorkerContext& ctx) = 0;
  // JS thread, only after a successful Execute: the value to resolve with.
  virtual Napi::Value Result(Napi::Env env) = 0;

  // JS thread, in the scope that made the job: the promise Settle()/Reject() settle.
  Napi::Promise Promise() const { return Napi::Promise(env_, promise_); }

  // Worker thread: Execute() with every exception turned into an error code.
  void Run(WorkerContext& ctx) noexcept;
  // JS thread: resolve or reject according to Run()'s outcome. Never throws, and always settles the promise
  // (short of the env shutting down).
  void Settle(Napi::Env env) noexcept;
  // JS thread: reject without running (admission failure). Never throws, and always settles the promise:
  // with a coded Error, or with the bare message when even that Error cannot be built.
  void Reject(Napi::Env env, ErrorCode code, const std::string& message) noexcept;
  // Environment teardown: JS can no longer be called, so forget the handles
  // instead of deleting them through N-API (the env frees them itself).
  void Abandon() noexcept;

  bool failed() const { return code_ != ErrorCode::kNone; }
  void MarkEnqueued() { enqueued_ = Clock::now(); }
  void MarkStarted() { started_ = Clock::now(); }
  double queueMs() const { return MillisBetween(enqueued_, started_); }

 protected:
  // Keeps a JS value (e.g. the input Buffer) alive until the job is settled, so
  // workers can read its memory without a copy. Without it the GC may free the
  // backing store under a running worker.
  void Pin(Napi::Value value);

 private:
  // The raw deferred rather than Napi::Promise::Deferred: Reject()/Settle() must know whether N-API consumed it.
  napi_env env_;
  napi_deferred deferred_ = nullptr;
  napi_value promise_ = nullptr;
  std::vector<Napi::Reference<Napi::Value>> pins_;
  ErrorCode code_ = ErrorCode::kNone;
  std::string message_;
  Clock::time_point enqueued_{};
  Clock::time_point started_{};
};

}  // namespace edgecv
