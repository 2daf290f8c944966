#include "bindings/native_engine.h"

#include <exception>
#include <optional>
#include <stdexcept>
#include <variant>

#include "jobs/js_errors.h"
#include "bindings/options.h"
#include "jobs/detect_job.h"
#include "jobs/face_embed_job.h"
#include "jobs/gallery_search_job.h"
#include "jobs/run_model_job.h"
#include "jobs/warm_up.h"
#include "runtime/onnxruntime_library.h"
#include "runtime/recycled_buffers.h"
#include "pool/worker_context.h"

namespace edgecv {
namespace {

// One worker's copy of an object detector, of the family its spec names; null without a spec.
std::unique_ptr<ObjectDetector> LoadObjectDetector(const std::optional<ObjectDetectorSpec>& spec,
                                                   const RuntimeOptions& runtime) {
  if (!spec) return nullptr;
  if (const auto* yolo = std::get_if<YoloDetectorSpec>(&*spec)) return std::make_unique<YoloDetector>(*yolo, runtime);
  return std::make_unique<CenterNetDetector>(std::get<CenterNetDetectorSpec>(*spec), runtime);
}

// onnxruntime's library when options name one (what failed, when it did not load), and the device to run on.
RuntimeAvailability LoadRuntimes(Napi::Env env, const Napi::Object& options) {
  RuntimeAvailability available;
  try {
    if (!IsMissing(options.Get("onnxRuntimeLibrary"))) {
      const std::string library = ReadString(options, "onnxRuntimeLibrary", "options");
      try {
        LoadOnnxRuntime(library);
        available.onnxRuntime = true;
      } catch (const std::runtime_error& e) {
        available.onnxRuntimeMissing = e.what();
      }
    } else {
      available.onnxRuntimeMissing = "no onnxRuntimeLibrary given";
    }
    const std::string wantedBackend = ReadString(options, "backend", "options");
    available.backend = SelectBackend(wantedBackend, available.onnxRuntime ? LoadedOnnxRuntime() : nullptr);
  } catch (const std::runtime_error& e) {
    throw Napi::Error::New(env, std::string("edgecv: ") + e.what());
  }
  return available;
}

// One copy of every model per worker (a model's sessions are not shared between threads).
std::vector<std::unique_ptr<WorkerContext>> LoadWorkerContexts(const ModelSpecs& specs, const RuntimeOptions& runtime,
                                                               int workers) {
  std::vector<std::unique_ptr<WorkerContext>> contexts;
  for (int i = 0; i < workers; ++i) {
    auto ctx = std::make_unique<WorkerContext>();
    ctx->runtime = runtime;
    if (specs.faceDetector) ctx->faceDetector = std::make_unique<FaceDetector>(*specs.faceDetector, runtime);
    if (specs.poseEstimator) ctx->poseEstimator = std::make_unique<PoseEstimator>(*specs.poseEstimator, runtime);
    ctx->objectDetector = LoadObjectDetector(specs.objectDetector, runtime);
    ctx->personDetector = LoadObjectDetector(specs.personDetector, runtime);
    if (specs.faceEmbedder) ctx->faceEmbedder = std::make_unique<FaceEmbedder>(*specs.faceEmbedder, runtime);
    contexts.push_back(std::move(ctx));
  }
  return contexts;
}

}  // namespace

NativeEngine::NativeEngine(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeEngine>(info), env_(info.Env()) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) ThrowInvalid(env, "createEngine(options): options must be an object");
  Napi::Object options = info[0].As<Napi::Object>();
  const PoolOptions pool = ReadPoolOptions(options);

  // The runtimes first: which one runs a model depends on what loaded and on the device.
  const RuntimeAvailability available = LoadRuntimes(env, options);
  backend_ = available.backend;
  onnxRuntimeMissing_ = available.onnxRuntimeMissing;
  // Only where it can help: onnxruntime on the CPU, with more usable CPUs than one worker's threads.
  if (pool.lendIdleCores && available.onnxRuntime && backend_.kind == BackendKind::kCpu &&
      LoadedOnnxRuntime()->usableCpus > pool.threadsPerWorker) {
    idleCores_ = std::make_shared<IdleCores>();
  }
  if (backend_.webGpu) gpuSessions_ = std::make_shared<GpuSessions>();

  const ModelSpecs specs = ReadModelSpecs(options, available);
  const auto loaded = [&](const char* key, const ModelSource& model) {
    models_.push_back({key, model.runtime, model.path, model.gpu});
  };
  if (specs.faceDetector) loaded("faceDetector", specs.faceDetector->model);
  if (specs.poseEstimator) loaded("poseEstimator", specs.poseEstimator->model);
  if (specs.objectDetector) loaded("objectDetector", ImageSpecOf(*specs.objectDetector).model);
  if (specs.personDetector) loaded("personDetector", ImageSpecOf(*specs.personDetector).model);
  if (specs.faceEmbedder) loaded("faceEmbedder", specs.faceEmbedder->model);

  // Load one copy of every model per worker, here on the JS thread, so a bad
  // model fails createEngine() synchronously with a clear message.
  std::vector<std::unique_ptr<WorkerContext>> contexts;
  try {
    const RuntimeOptions runtime{backend_,  pool.threadsPerWorker, idleCores_, rewrites_,
                                 coldRuns_, gpuSessions_,          pool.warmUp};
    contexts = LoadWorkerContexts(specs, runtime, pool.workers);
    if (specs.faceEmbedder) embeddingSize_ = contexts.front()->faceEmbedder->dim();
    if (pool.warmUp) coldRuns_->SetWarmUpMs(WarmUpAll(contexts));
  } catch (const std::exception& e) {  // includes cv::Exception
    throw Napi::Error::New(env, std::string("edgecv: ") + e.what());
  }
  rewrites_->LoadingDone();  // the optimized graphs kept for the workers' copies are no longer needed
  coldRuns_->LoadingDone();  // every model is warm at every shape it will see: later cold runs are counted
  hasFaceDetector_ = static_cast<bool>(specs.faceDetector);
  hasPoseEstimator_ = static_cast<bool>(specs.poseEstimator);
  hasObjectDetector_ = specs.objectDetector.has_value();

  // Unlimited TSFN queue: workers never block on the JS thread. Unref'd while
  // idle so an open engine alone doesn't keep the process alive.
  completion_ = CompletionFn::New(env, "edgecv.completion", 0, 1, this);
  completionLive_ = true;
  completion_.Unref(env);

  try {
    CompletionFn completion = completion_;
    pool_ = std::make_unique<WorkerPool>(std::move(contexts), pool.threadsPerWorker, pool.queueLimit, idleCores_,
                                         [completion](std::unique_ptr<Job> job) {
                                           if (completion.NonBlockingCall(job.get()) == napi_ok) {
                                             job.release();  // owned by the TSFN queue until OnJobDone
                                           } else {
                                             job->Abandon();  // env is closing: JS is unreachable
                                           }
                                         });
  } catch (const std::exception& e) {
    completion_.Release();
    completionLive_ = false;
    throw Napi::Error::New(env, std::string("edgecv: could not start workers: ") + e.what());
  }

  // Worker threads must be stopped before the env (and maybe the addon) goes
  // away, even if close() was never called.
  cleanupHookRegistered_ = napi_add_env_cleanup_hook(env, &NativeEngine::OnEnvCleanup, this) == napi_ok;
}

NativeEngine::~NativeEngine() {
  // Normally reached by GC after close(), or of an idle engine (the object is
  // Ref'd while jobs are in flight), so nothing is left to abandon.
  Teardown();
  if (cleanupHookRegistered_) {
    napi_remove_env_cleanup_hook(env_, &NativeEngine::OnEnvCleanup, this);
    cleanupHookRegistered_ = false;
  }
}

void NativeEngine::OnEnvCleanup(void* arg) {
  auto* self = static_cast<NativeEngine*>(arg);
  self->cleanupHookRegistered_ = false;
  self->Teardown();
}

void NativeEngine::Teardown() noexcept {
  try {
    if (pool_) {
      for (auto& job : pool_->Abort()) job->Abandon();
      pool_->Join();
    }
    if (completionLive_) {
      completion_.Release();
      completionLive_ = false;
    }
  } catch (...) {
    // Teardown must not throw (destructor / cleanup hook).
  }
  state_ = State::kClosed;
}

template <typename MakeJob>
Napi::Value NativeEngine::SubmitImageJob(const Napi::CallbackInfo& info, bool hasModel, const char* model,
                                         MakeJob&& makeJob) {
  Napi::Env env = info.Env();
  return PromiseOrRejection(env, [&] {
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      ThrowCoded(env, ErrorCode::kInvalidArgument, "image must be a Buffer or Uint8Array");
    }
    if (!hasModel)
      ThrowCoded(env, ErrorCode::kInvalidArgument, std::string("this engine was created without a ") + model);
    return Submit(env, makeJob(info[0].As<Napi::Uint8Array>()));
  });
}

Napi::Value NativeEngine::DetectFaces(const Napi::CallbackInfo& info) {
  return SubmitImageJob(info, hasFaceDetector_, "faceDetector", [&](Napi::Uint8Array image) {
    return std::make_unique<FaceDetectJob>(info.Env(), image, ReadDetectOptions(info.Env(), info[1]), kFaceDetection);
  });
}

Napi::Value NativeEngine::DetectPoses(const Napi::CallbackInfo& info) {
  return SubmitImageJob(info, hasPoseEstimator_, "poseEstimator", [&](Napi::Uint8Array image) {
    return std::make_unique<PoseDetectJob>(info.Env(), image, ReadPoseOptions(info.Env(), info[1]), kPoseDetection);
  });
}

Napi::Value NativeEngine::DetectObjects(const Napi::CallbackInfo& info) {
  return SubmitImageJob(info, hasObjectDetector_, "objectDetector", [&](Napi::Uint8Array image) {
    return std::make_unique<ObjectDetectJob>(info.Env(), image, ReadObjectOptions(info.Env(), info[1]),
                                             kObjectDetection);
  });
}

Napi::Value NativeEngine::EmbedFace(const Napi::CallbackInfo& info) {
  return SubmitImageJob(info, embeddingSize_ > 0, "faceEmbedder", [&](Napi::Uint8Array image) {
    FaceEmbedRequest request = ReadEmbedRequest(info.Env(), info[1]);
    if (!request.useRect && !hasFaceDetector_) {
      ThrowCoded(info.Env(), ErrorCode::kInvalidArgument, "this engine has no faceDetector: pass options.rect");
    }
    return std::make_unique<FaceEmbedJob>(info.Env(), image, std::move(request));
  });
}

Napi::Value NativeEngine::RunModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return PromiseOrRejection(env, [&] {
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      ThrowCoded(env, ErrorCode::kInvalidArgument, "input must be a Float32Array");
    }
    if (!info[1].IsObject()) ThrowCoded(env, ErrorCode::kInvalidArgument, "model spec must be an object");
    RuntimeAvailability available;
    available.backend = backend_;
    available.onnxRuntime = LoadedOnnxRuntime() != nullptr;
    available.onnxRuntimeMissing = onnxRuntimeMissing_;
    RawModelSpec spec = ReadRawModelSpec(info[1].As<Napi::Object>(), available);
    return Submit(env, std::make_unique<RunModelJob>(env, info[0].As<Napi::Float32Array>(), std::move(spec)));
  });
}

Napi::Value NativeEngine::SearchGallery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return PromiseOrRejection(env, [&] {
    std::shared_ptr<GalleryIndex> index = ReadGallery(env, info[0]);
    if (!index) ThrowInvalid(env, "gallery must be a gallery made by createGallery()");
    if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      ThrowInvalid(env, "query must be a Float32Array");
    }
    Napi::Float32Array query = info[1].As<Napi::Float32Array>();
    std::vector<float> copy(query.Data(), query.Data() + query.ElementLength());
    return Submit(env, std::make_unique<GallerySearchJob>(env, std::move(copy), index->Snapshot()));
  });
}

Napi::Value NativeEngine::EmbeddingSize(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), embeddingSize_);
}

Napi::Value NativeEngine::SetHostRequests(const Napi::CallbackInfo& info) {
  // Checked in JS (src/engine/engine.ts); this only guards the conversion.
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(info.Env(), "setHostRequests(count): count must be a number").ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  if (idleCores_) idleCores_->SetHostRequests(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

Napi::Promise NativeEngine::Submit(Napi::Env env, std::unique_ptr<Job> job) {
  Napi::Promise promise = job->Promise();
  switch (pool_->Submit(job)) {
    case WorkerPool::Admission::kAccepted:
      if (inFlight_++ == 0) {
        // Keep the event loop alive (TSFN ref) and this object un-collected
        // (ObjectWrap ref) until every in-flight promise has settled.
        completion_.Ref(env);
        Ref();
      }
      break;
    case WorkerPool::Admission::kOverloaded:
      job->Reject(env, ErrorCode::kOverloaded,
                  "engine overloaded: " + std::to_string(pool_->queueLimit()) + " jobs already queued");
      break;
    case WorkerPool::Admission::kClosed:
      job->Reject(env, ErrorCode::kClosed, "engine is closed");
      break;
  }
  return promise;
}

void NativeEngine::OnJobDone(Napi::Env env, Napi::Function, NativeEngine* self, Job* raw) {
  std::unique_ptr<Job> job(raw);
  if (env == nullptr || self == nullptr) {
    job->Abandon();  // env teardown: the promise can never be observed
    return;
  }
  job->Settle(env);  // noexcept
  job.reset();       // drops the Buffer pin here, on the JS thread
  try {
    self->JobSettled(env);
  } catch (...) {
    // Bookkeeping only; never let it escape into N-API.
  }
}

void NativeEngine::JobSettled(Napi::Env env) {
  if (--inFlight_ > 0) return;
  completion_.Unref(env);
  if (state_ == State::kClosing) FinishClose(env);
  Unref();
}

void NativeEngine::FinishClose(Napi::Env env) {
  pool_->Join();  // workers are idle and exiting: the queue was drained
  if (completionLive_) {
    completion_.Release();
    completionLive_ = false;
  }
  state_ = State::kClosed;
  std::vector<Napi::Promise::Deferred> waiters;
  waiters.swap(closeWaiters_);
  for (auto& waiter : waiters) waiter.Resolve(env.Undefined());
}

Napi::Value NativeEngine::Close(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto deferred = Napi::Promise::Deferred::New(env);
  try {
    if (state_ == State::kClosed) {
      deferred.Resolve(env.Undefined());
      return deferred.Promise();
    }
    closeWaiters_.push_back(deferred);
    if (state_ == State::kOpen) {
      state_ = State::kClosing;
      pool_->Drain();  // queued jobs still run and settle normally
    }
    if (inFlight_ == 0) FinishClose(env);
  } catch (const std::exception& e) {
    deferred.Reject(MakeCodedError(env, ErrorCode::kInternal, e.what()).Value());
  }
  return deferred.Promise();
}

Napi::Value NativeEngine::Backend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("backend", Napi::String::New(env, BackendName(backend_.kind)));
  out.Set("device", Napi::String::New(env, backend_.device));
  Napi::Object runtimes = Napi::Object::New(env);
  Napi::Object fusedOps = Napi::Object::New(env);
  {
    const std::lock_guard<std::mutex> lock(rewrites_->mutex);
    for (const LoadedModel& model : models_) {
      runtimes.Set(model.key, Napi::String::New(env, RuntimeName(model.runtime)));
      const auto found = rewrites_->files.find(model.path);
      const GraphRewrites::Fused counts =
          found == rewrites_->files.end() ? GraphRewrites::Fused{} : found->second.fused;
      Napi::Object ops = Napi::Object::New(env);
      ops.Set("siluLookups", Napi::Number::New(env, counts.siluLookups));
      ops.Set("upsamples", Napi::Number::New(env, counts.upsamples));
      ops.Set("concats", Napi::Number::New(env, counts.concats));
      fusedOps.Set(model.key, ops);
    }
  }
  out.Set("runtimes", runtimes);
  out.Set("fusedOps", fusedOps);
  // Where each model runs: "gpu" or the backend's device ("cpu"/"cuda"), and why a GPU net left the GPU at run time.
  Napi::Object devices = Napi::Object::New(env);
  Napi::Object gpuLost = Napi::Object::New(env);
  for (const LoadedModel& model : models_) {
    const std::string lost = model.gpu && gpuSessions_ ? gpuSessions_->LostReason(model.path) : std::string();
    devices.Set(model.key, Napi::String::New(env, model.gpu && lost.empty() ? "gpu" : BackendName(backend_.kind)));
    if (!lost.empty()) gpuLost.Set(model.key, Napi::String::New(env, lost));
  }
  out.Set("devices", devices);
  out.Set("gpuLost", gpuLost);
  // The Vulkan adapter, looked for with backend gpu or auto (null with cpu and cuda).
  const GpuAdapter& gpu = backend_.gpu;
  if (gpu.found || !gpu.why.empty()) {
    Napi::Object adapter = Napi::Object::New(env);
    adapter.Set("found", Napi::Boolean::New(env, gpu.found));
    adapter.Set("usable", Napi::Boolean::New(env, backend_.webGpu));
    if (!backend_.webGpu) adapter.Set("why", Napi::String::New(env, backend_.webGpuMissing));
    if (gpu.found) {
      adapter.Set("vendor", Napi::String::New(env, gpu.vendor));
      adapter.Set("device", Napi::String::New(env, gpu.device));
      adapter.Set("driver", Napi::String::New(env, gpu.driver));
      adapter.Set("type", Napi::String::New(env, gpu.type));
      adapter.Set("api", Napi::String::New(env, "Vulkan " + gpu.api));
      adapter.Set("software", Napi::Boolean::New(env, gpu.software));
    }
    adapter.Set("adapters", Napi::Number::New(env, gpu.adapters));
    out.Set("gpu", adapter);
  } else {
    out.Set("gpu", env.Null());
  }
  const OnnxRuntimeInfo* ort = LoadedOnnxRuntime();
  if (ort) {
    Napi::Object info = Napi::Object::New(env);
    info.Set("version", Napi::String::New(env, ort->version));
    info.Set("path", Napi::String::New(env, ort->path));
    info.Set("cuda", Napi::Boolean::New(env, ort->cuda));
    info.Set("webGpu", Napi::Boolean::New(env, ort->webGpu));
    info.Set("int8DotProduct", Napi::Boolean::New(env, ort->int8DotProduct));
    out.Set("onnxRuntime", info);
  } else {
    out.Set("onnxRuntime", env.Null());
    out.Set("onnxRuntimeMissing", Napi::String::New(env, onnxRuntimeMissing_));
  }
  return out;
}

Napi::Value NativeEngine::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const WorkerPool::Stats s = pool_->stats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("queued", Napi::Number::New(env, static_cast<double>(s.queued)));
  out.Set("running", Napi::Number::New(env, static_cast<double>(s.running)));
  out.Set("completed", Napi::Number::New(env, static_cast<double>(s.completed)));
  out.Set("failed", Napi::Number::New(env, static_cast<double>(s.failed)));
  out.Set("rejected", Napi::Number::New(env, static_cast<double>(s.rejected)));
  out.Set("workers", Napi::Number::New(env, static_cast<double>(pool_->workers())));
  out.Set("threadsPerWorker", Napi::Number::New(env, pool_->threadsPerWorker()));
  out.Set("queueLimit", Napi::Number::New(env, static_cast<double>(pool_->queueLimit())));
  // Inferences a job alone in the engine ran on every core (0 when idle cores are kept).
  out.Set("lentRuns", Napi::Number::New(env, idleCores_ ? static_cast<double>(idleCores_->borrowed()) : 0.0));
  // Inferences since open at an input shape their session had not been warmed at (runtime/shape_runs.h).
  out.Set("coldRuns", Napi::Number::New(env, static_cast<double>(coldRuns_->count())));
  // Forward passes of GPU nets on the GPU, and on the CPU after the GPU failed them (runtime/gpu_sessions.h).
  out.Set("gpuRuns", Napi::Number::New(env, gpuSessions_ ? static_cast<double>(gpuSessions_->gpuRuns()) : 0.0));
  out.Set("gpuFallbackRuns", Napi::Number::New(env, gpuSessions_ ? static_cast<double>(gpuSessions_->cpuRuns()) : 0.0));
  const ColdRuns::WarmUp warm = coldRuns_->warmUp();
  Napi::Object warmUp = Napi::Object::New(env);
  warmUp.Set("runs", Napi::Number::New(env, warm.runs));
  warmUp.Set("ms", Napi::Number::New(env, warm.ms));
  out.Set("warmUp", warmUp);
  // A call's large buffers, process-wide (runtime/recycled_buffers.h).
  const RecycledBufferStats buffers = RecycledBuffers();
  Napi::Object recycled = Napi::Object::New(env);
  recycled.Set("allocated", Napi::Number::New(env, static_cast<double>(buffers.allocated)));
  recycled.Set("reused", Napi::Number::New(env, static_cast<double>(buffers.reused)));
  recycled.Set("idleBytes", Napi::Number::New(env, static_cast<double>(buffers.idleBytes)));
  out.Set("recycledBuffers", recycled);
  return out;
}

}  // namespace edgecv
