// The engine object createEngine() returns: one worker pool with a copy of every model per worker, and one
// method per job type. Each method checks its arguments (bindings/options.h), builds a Job and submits it;
// the promise settles on the JS thread when the job is done (see addon.cc for the flow).
#pragma once

#include <napi.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/backend.h"
#include "runtime/inference_model.h"
#include "pool/job.h"
#include "pool/worker_pool.h"

namespace edgecv {

class NativeEngine : public Napi::ObjectWrap<NativeEngine> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeEngine",
                       {
                           InstanceMethod<&NativeEngine::DetectFaces>("detectFaces"),
                           InstanceMethod<&NativeEngine::DetectPoses>("detectPoses"),
                           InstanceMethod<&NativeEngine::DetectObjects>("detectObjects"),
                           InstanceMethod<&NativeEngine::RunModel>("runModel"),
                           InstanceMethod<&NativeEngine::EmbedFace>("embedFace"),
                           InstanceMethod<&NativeEngine::SearchGallery>("searchGallery"),
                           InstanceMethod<&NativeEngine::EmbeddingSize>("embeddingSize"),
                           InstanceMethod<&NativeEngine::Backend>("backend"),
                           InstanceMethod<&NativeEngine::Stats>("stats"),
                           InstanceMethod<&NativeEngine::SetHostRequests>("setHostRequests"),
                           InstanceMethod<&NativeEngine::Close>("close"),
                       });
  }

  explicit NativeEngine(const Napi::CallbackInfo& info);
  ~NativeEngine() override;

 private:
  // Runs on the JS thread for each finished job; env is null during env teardown.
  static void OnJobDone(Napi::Env env, Napi::Function, NativeEngine* self, Job* job);
  using CompletionFn = Napi::TypedThreadSafeFunction<NativeEngine, Job, &NativeEngine::OnJobDone>;
  enum class State { kOpen, kClosing, kClosed };

  Napi::Value DetectFaces(const Napi::CallbackInfo& info);
  Napi::Value DetectPoses(const Napi::CallbackInfo& info);
  Napi::Value DetectObjects(const Napi::CallbackInfo& info);
  // Shared by the image methods: checks the image argument and the model, then submits makeJob(image).
  template <typename MakeJob>
  Napi::Value SubmitImageJob(const Napi::CallbackInfo& info, bool hasModel, const char* model, MakeJob&& makeJob);
  Napi::Value RunModel(const Napi::CallbackInfo& info);
  Napi::Value EmbedFace(const Napi::CallbackInfo& info);
  Napi::Value SearchGallery(const Napi::CallbackInfo& info);
  Napi::Value EmbeddingSize(const Napi::CallbackInfo& info);
  Napi::Value Backend(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  // The host's count of requests it is serving (idle cores lend short runs only while it is 1).
  Napi::Value SetHostRequests(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  Napi::Promise Submit(Napi::Env env, std::unique_ptr<Job> job);
  void JobSettled(Napi::Env env);
  void FinishClose(Napi::Env env);
  void Teardown() noexcept;
  static void OnEnvCleanup(void* self);

  napi_env env_;
  BackendInfo backend_;
  struct LoadedModel {
    std::string key;  // its spec key (faceDetector, ...)
    RuntimeKind runtime;
    std::string path;
    bool gpu;  // a GPU net (runtime/gpu_sessions.h)
  };
  std::vector<LoadedModel> models_;
  std::shared_ptr<GraphRewrites> rewrites_ = std::make_shared<GraphRewrites>();
  std::shared_ptr<ColdRuns> coldRuns_ = std::make_shared<ColdRuns>();
  std::string onnxRuntimeMissing_;  // why onnxruntime did not load, if it did not
  bool hasFaceDetector_ = false;
  bool hasPoseEstimator_ = false;
  bool hasObjectDetector_ = false;
  int embeddingSize_ = 0;                     // 0: no embedding model
  std::shared_ptr<IdleCores> idleCores_;      // null: each job keeps to its worker's threads
  std::shared_ptr<GpuSessions> gpuSessions_;  // null: WebGPU is not usable (backend cpu or cuda, or no adapter)
  CompletionFn completion_;
  bool completionLive_ = false;
  bool cleanupHookRegistered_ = false;
  State state_ = State::kOpen;
  size_t inFlight_ = 0;  // submitted, not yet settled (JS thread only)
  std::vector<Napi::Promise::Deferred> closeWaiters_;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace edgecv
