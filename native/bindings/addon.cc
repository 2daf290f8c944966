// Module entry: createEngine(options) -> NativeEngine.
//
// Flow of one request (sharp's pattern): the JS thread builds a Job (pinning the
// input Buffer), the pool runs it on one of its own std::threads, and a
// thread-safe function brings it back to the JS thread, where the promise is
// settled and the pin released. No exception crosses into N-API: every entry
// point catches and turns errors into JS errors / rejections with a `.code`.
#include <napi.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core/version.hpp>

#include "runtime/backend.h"
#include "runtime/error_code.h"
#include "jobs/face_detect_job.h"
#include "models/face_detector.h"
#include "jobs/face_embed_job.h"
#include "models/face_embedder.h"
#include "gallery/gallery_object.h"
#include "jobs/gallery_search_job.h"
#include "runtime/job.h"
#include "bindings/js_errors.h"
#include "jobs/object_detect_job.h"
#include "models/object_detector.h"
#include "models/yolo_detector.h"
#include "jobs/pose_detect_job.h"
#include "models/pose_estimator.h"
#include "jobs/run_model_job.h"
#include "runtime/inference_model.h"
#include "runtime/onnxruntime_library.h"
#include "runtime/worker_context.h"
#include "runtime/worker_pool.h"

namespace edgecv {
namespace {

// ---- option parsing (TS validates first; this is the backstop) -------------

bool IsMissing(const Napi::Value& v) { return v.IsUndefined() || v.IsNull(); }

double ReadNumber(Napi::Object obj, const char* key, const std::string& where, double fallback, double min,
                  double max, bool integer, bool required = false) {
  Napi::Env env = obj.Env();
  Napi::Value v = obj.Get(key);
  if (IsMissing(v)) {
    if (required) ThrowInvalid(env, where + "." + key + " is required");
    return fallback;
  }
  if (!v.IsNumber()) ThrowInvalid(env, where + "." + key + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d < min || d > max || (integer && std::floor(d) != d)) {
    ThrowInvalid(env, where + "." + key + " must be " + (integer ? "an integer" : "a number") + " in [" +
                          std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return d;
}

std::string ReadString(Napi::Object obj, const char* key, const std::string& where) {
  Napi::Value v = obj.Get(key);
  if (!v.IsString()) ThrowInvalid(obj.Env(), where + "." + key + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

std::vector<std::string> ReadStrings(Napi::Object obj, const char* key, const std::string& where) {
  Napi::Value v = obj.Get(key);
  if (!v.IsArray()) ThrowInvalid(obj.Env(), where + "." + key + " must be an array of strings");
  Napi::Array arr = v.As<Napi::Array>();
  std::vector<std::string> out;
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    Napi::Value item = arr.Get(i);
    if (!item.IsString()) ThrowInvalid(obj.Env(), where + "." + key + " must be an array of strings");
    out.push_back(item.As<Napi::String>().Utf8Value());
  }
  return out;
}

// What the engine can run models on, known before any spec is read: the backend, and whether onnxruntime loaded.
struct RuntimeAvailability {
  BackendInfo backend;
  bool onnxRuntime = false;
  std::string onnxRuntimeMissing;  // why not, when it did not load
};

// `runtime` of a spec: "opencv" runs `path` on OpenCV DNN, "onnxruntime" runs `ortPath` on onnxruntime, and
// "auto" (the default) onnxruntime when it is loaded and can drive the backend's device, else OpenCV.
ModelSource ReadModelSource(Napi::Object obj, const std::string& where, const RuntimeAvailability& available) {
  Napi::Env env = obj.Env();
  const std::string opencvPath = ReadString(obj, "path", where);
  const std::string ortPath = IsMissing(obj.Get("ortPath")) ? "" : ReadString(obj, "ortPath", where);
  const std::string wanted = IsMissing(obj.Get("runtime")) ? "auto" : ReadString(obj, "runtime", where);
  if (wanted != "auto" && wanted != "opencv" && wanted != "onnxruntime") {
    ThrowInvalid(env, where + ".runtime must be one of auto, opencv, onnxruntime");
  }
  const bool deviceOk = available.backend.kind == BackendKind::kCpu || available.backend.onnxRuntimeCuda;
  if (wanted == "onnxruntime") {
    if (ortPath.empty()) ThrowInvalid(env, where + ".ortPath is required with runtime onnxruntime");
    if (!available.onnxRuntime) ThrowInvalid(env, where + ": runtime onnxruntime is not available: " + available.onnxRuntimeMissing);
  }
  if (wanted == "onnxruntime" || (wanted == "auto" && !ortPath.empty() && available.onnxRuntime && deviceOk)) {
    return {ortPath, RuntimeKind::kOnnxRuntime};
  }
  return {opencvPath, RuntimeKind::kOpenCv};
}

FaceDetectorSpec ReadFaceDetectorSpec(Napi::Object obj, const RuntimeAvailability& available) {
  const std::string where = "faceDetector";
  FaceDetectorSpec spec;
  spec.model = ReadModelSource(obj, where, available);
  spec.inputSize = static_cast<int>(ReadNumber(obj, "inputSize", where, 0, 16, 4096, true, true));
  Napi::Value layers = obj.Get("anchorLayers");
  if (!layers.IsArray() || layers.As<Napi::Array>().Length() == 0) {
    ThrowInvalid(obj.Env(), where + ".anchorLayers must be a non-empty array");
  }
  Napi::Array arr = layers.As<Napi::Array>();
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    Napi::Value item = arr.Get(i);
    if (!item.IsObject()) ThrowInvalid(obj.Env(), where + ".anchorLayers[] must be objects");
    const std::string at = where + ".anchorLayers[" + std::to_string(i) + "]";
    AnchorLayer layer;
    layer.stride = static_cast<int>(ReadNumber(item.As<Napi::Object>(), "stride", at, 0, 1, 4096, true, true));
    layer.anchors = static_cast<int>(ReadNumber(item.As<Napi::Object>(), "anchors", at, 0, 1, 64, true, true));
    spec.anchorLayers.push_back(layer);
  }
  spec.scoreOutputs = ReadStrings(obj, "scoreOutputs", where);
  spec.boxOutputs = ReadStrings(obj, "boxOutputs", where);
  spec.meanValue = ReadNumber(obj, "meanValue", where, 127.5, -1e6, 1e6, false);
  spec.scale = ReadNumber(obj, "scale", where, 1.0 / 127.5, -1e6, 1e6, false);
  Napi::Value swap = obj.Get("swapRB");
  if (!IsMissing(swap)) {
    if (!swap.IsBoolean()) ThrowInvalid(obj.Env(), where + ".swapRB must be a boolean");
    spec.swapRB = swap.As<Napi::Boolean>().Value();
  }
  return spec;
}

DetectOptions ReadDetectOptions(Napi::Env env, Napi::Value value) {
  DetectOptions options;
  if (IsMissing(value)) return options;
  if (!value.IsObject()) ThrowInvalid(env, "detectFaces options must be an object");
  Napi::Object obj = value.As<Napi::Object>();
  options.scoreThreshold = static_cast<float>(ReadNumber(obj, "scoreThreshold", "options", 0.5, 0, 1, false));
  options.iouThreshold = static_cast<float>(ReadNumber(obj, "iouThreshold", "options", 0.3, 0, 1, false));
  options.tiles = static_cast<int>(ReadNumber(obj, "tiles", "options", 0, 0, 16, true));
  return options;
}

// Input normalization shared by the model specs: meanValue, scale, swapRB.
template <typename Spec>
void ReadInputNormalization(Napi::Object obj, const std::string& where, Spec* spec) {
  spec->meanValue = ReadNumber(obj, "meanValue", where, spec->meanValue, -1e6, 1e6, false);
  spec->scale = ReadNumber(obj, "scale", where, spec->scale, -1e6, 1e6, false);
  Napi::Value swap = obj.Get("swapRB");
  if (!IsMissing(swap)) {
    if (!swap.IsBoolean()) ThrowInvalid(obj.Env(), where + ".swapRB must be a boolean");
    spec->swapRB = swap.As<Napi::Boolean>().Value();
  }
}

PoseEstimatorSpec ReadPoseEstimatorSpec(Napi::Object obj, const RuntimeAvailability& available) {
  const std::string where = "poseEstimator";
  PoseEstimatorSpec spec;
  spec.model = ReadModelSource(obj, where, available);
  spec.inputSize = static_cast<int>(ReadNumber(obj, "inputSize", where, 0, 32, 4096, true, true));
  spec.outputs = ReadStrings(obj, "outputs", where);
  if (spec.outputs.size() != PoseEstimator::kOutputs) ThrowInvalid(obj.Env(), where + ".outputs must name 6 outputs");
  ReadInputNormalization(obj, where, &spec);
  return spec;
}

ObjectDetectorSpec ReadObjectDetectorSpec(Napi::Object obj, const RuntimeAvailability& available) {
  const std::string where = "objectDetector";
  ObjectDetectorSpec spec;
  spec.model = ReadModelSource(obj, where, available);
  spec.inputSize = static_cast<int>(ReadNumber(obj, "inputSize", where, 0, 32, 4096, true, true));
  spec.heatmapOutput = ReadString(obj, "heatmapOutput", where);
  spec.boxOutput = ReadString(obj, "boxOutput", where);
  spec.classes = static_cast<int>(ReadNumber(obj, "classes", where, 0, 1, 100000, true, true));
  ReadInputNormalization(obj, where, &spec);
  return spec;
}

// `objectDetector` is a YOLO spec when its `kind` is "yolo", a centernet spec when absent or "centernet".
bool IsYoloSpec(Napi::Value value) {
  if (!value.IsObject()) return false;  // absent, or rejected by ReadOptionalSpec
  Napi::Value kind = value.As<Napi::Object>().Get("kind");
  if (IsMissing(kind)) return false;
  const std::string name = kind.IsString() ? kind.As<Napi::String>().Utf8Value() : "";
  if (name != "centernet" && name != "yolo") ThrowInvalid(value.Env(), "objectDetector.kind must be \"centernet\" or \"yolo\"");
  return name == "yolo";
}

// The YOLO spec: `objectDetector` with kind "yolo" (layout "grid" or "decoded").
YoloDetectorSpec ReadYoloDetectorSpec(Napi::Object obj, const RuntimeAvailability& available) {
  const std::string where = "objectDetector";
  Napi::Env env = obj.Env();
  YoloDetectorSpec spec;
  spec.model = ReadModelSource(obj, where, available);
  spec.inputSize = static_cast<int>(ReadNumber(obj, "inputSize", where, 0, 32, 4096, true, true));
  const std::string layout = ReadString(obj, "layout", where);
  if (layout != "grid" && layout != "decoded") ThrowInvalid(env, where + ".layout must be \"grid\" or \"decoded\"");
  spec.layout = layout == "grid" ? YoloDetectorSpec::Layout::kGrid : YoloDetectorSpec::Layout::kDecoded;
  spec.outputs = ReadStrings(obj, "outputs", where);
  spec.classes = static_cast<int>(ReadNumber(obj, "classes", where, 0, 1, 100000, true, true));
  if (spec.layout == YoloDetectorSpec::Layout::kGrid) {
    Napi::Value strides = obj.Get("strides");
    Napi::Value anchors = obj.Get("anchors");
    if (!strides.IsArray() || !anchors.IsArray()) ThrowInvalid(env, where + ".strides and .anchors must be arrays");
    Napi::Array s = strides.As<Napi::Array>();
    Napi::Array a = anchors.As<Napi::Array>();
    for (uint32_t i = 0; i < s.Length(); ++i) {
      Napi::Value v = s.Get(i);
      if (!v.IsNumber()) ThrowInvalid(env, where + ".strides must be numbers");
      spec.strides.push_back(v.As<Napi::Number>().Int32Value());
    }
    for (uint32_t i = 0; i < a.Length(); ++i) {
      Napi::Value list = a.Get(i);
      if (!list.IsArray()) ThrowInvalid(env, where + ".anchors must be arrays of (w, h) pairs");
      Napi::Array pairs = list.As<Napi::Array>();
      std::vector<float> values;
      for (uint32_t k = 0; k < pairs.Length(); ++k) {
        Napi::Value v = pairs.Get(k);
        if (!v.IsNumber()) ThrowInvalid(env, where + ".anchors must be numbers");
        values.push_back(v.As<Napi::Number>().FloatValue());
      }
      if (values.empty() || values.size() % 2 != 0) ThrowInvalid(env, where + ".anchors lists must hold (w, h) pairs");
      spec.anchors.push_back(std::move(values));
    }
  }
  ReadInputNormalization(obj, where, &spec);
  spec.padValue = ReadNumber(obj, "padValue", where, spec.padValue, 0, 255, false);
  return spec;
}

PoseOptions ReadPoseOptions(Napi::Env env, Napi::Value value) {
  PoseOptions options;
  if (IsMissing(value)) return options;
  if (!value.IsObject()) ThrowInvalid(env, "detectPoses options must be an object");
  Napi::Object obj = value.As<Napi::Object>();
  options.scoreThreshold = static_cast<float>(ReadNumber(obj, "scoreThreshold", "options", options.scoreThreshold, 0, 1, false));
  options.maxPoses = static_cast<int>(ReadNumber(obj, "maxPoses", "options", options.maxPoses, 1, 64, true));
  options.personClassId = static_cast<int>(ReadNumber(obj, "personClassId", "options", options.personClassId, -1, 100000, true));
  options.personThreshold = static_cast<float>(ReadNumber(obj, "personThreshold", "options", options.personThreshold, 0, 1, false));
  return options;
}

ObjectOptions ReadObjectOptions(Napi::Env env, Napi::Value value) {
  ObjectOptions options;
  if (IsMissing(value)) return options;
  if (!value.IsObject()) ThrowInvalid(env, "detectObjects options must be an object");
  Napi::Object obj = value.As<Napi::Object>();
  options.scoreThreshold = static_cast<float>(ReadNumber(obj, "scoreThreshold", "options", options.scoreThreshold, 0, 1, false));
  options.maxObjects = static_cast<int>(ReadNumber(obj, "maxObjects", "options", options.maxObjects, 1, 10000, true));
  return options;
}

FaceEmbedderSpec ReadFaceEmbedderSpec(Napi::Object obj, const RuntimeAvailability& available) {
  const std::string where = "faceEmbedder";
  FaceEmbedderSpec spec;
  spec.model = ReadModelSource(obj, where, available);
  spec.inputSize = static_cast<int>(ReadNumber(obj, "inputSize", where, 0, 16, 4096, true, true));
  spec.output = ReadString(obj, "output", where);
  spec.cropScale = ReadNumber(obj, "cropScale", where, spec.cropScale, 0.5, 4, false);
  ReadInputNormalization(obj, where, &spec);
  return spec;
}

// The gallery behind a JS value made by createGallery(), or null if it is something else.
std::shared_ptr<GalleryIndex> ReadGallery(Napi::Env env, Napi::Value value);

FaceEmbedRequest ReadEmbedRequest(Napi::Env env, Napi::Value value) {
  FaceEmbedRequest request;
  if (IsMissing(value)) return request;
  if (!value.IsObject()) ThrowInvalid(env, "embedFace options must be an object");
  Napi::Object obj = value.As<Napi::Object>();
  request.detect = ReadDetectOptions(env, obj.Get("detect"));
  request.cropScale = ReadNumber(obj, "cropScale", "options", 0, 0, 4, false);
  Napi::Value keep = obj.Get("keepCrop");
  request.keepCrop = !IsMissing(keep) && keep.ToBoolean().Value();
  Napi::Value rect = obj.Get("rect");
  if (!IsMissing(rect)) {
    if (!rect.IsArray() || rect.As<Napi::Array>().Length() != 4) ThrowInvalid(env, "options.rect must be [l, t, r, b]");
    Napi::Array arr = rect.As<Napi::Array>();
    for (uint32_t i = 0; i < 4; ++i) {
      Napi::Value v = arr.Get(i);
      const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
      if (!(std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 1e9)) ThrowInvalid(env, "options.rect must hold 4 integers");
      request.rect[i] = static_cast<int>(d);
    }
    request.useRect = true;
  }
  Napi::Value gallery = obj.Get("gallery");
  if (!IsMissing(gallery)) {
    std::shared_ptr<GalleryIndex> index = ReadGallery(env, gallery);
    if (!index) ThrowInvalid(env, "options.gallery must be a gallery made by createGallery()");
    request.gallery = index->Snapshot();  // taken now: the job sees the gallery as it was when submitted
  }
  return request;
}

// An optional model spec of createEngine()'s options: null when absent, else read by `read`.
template <typename Spec>
std::unique_ptr<Spec> ReadOptionalSpec(Napi::Object options, const char* key, const RuntimeAvailability& available,
                                       Spec (*read)(Napi::Object, const RuntimeAvailability&)) {
  Napi::Value value = options.Get(key);
  if (IsMissing(value)) return nullptr;
  if (!value.IsObject()) ThrowInvalid(options.Env(), std::string("options.") + key + " must be an object");
  return std::make_unique<Spec>(read(value.As<Napi::Object>(), available));
}

Napi::Promise RejectedPromise(Napi::Env env, Napi::Value error) {
  auto deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(error);
  return deferred.Promise();
}

Napi::Promise RejectedPromise(Napi::Env env, ErrorCode code, const std::string& message) {
  return RejectedPromise(env, MakeCodedError(env, code, message).Value());
}

// ---- the engine object --------------------------------------------------------

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
  // Shared by the detect methods: checks the image argument and the model, then submits.
  template <typename JobType, typename Options>
  Napi::Value SubmitImageJob(const Napi::CallbackInfo& info, bool hasModel, const char* model,
                             Options (*readOptions)(Napi::Env, Napi::Value));
  Napi::Value RunModel(const Napi::CallbackInfo& info);
  Napi::Value EmbedFace(const Napi::CallbackInfo& info);
  Napi::Value SearchGallery(const Napi::CallbackInfo& info);
  Napi::Value EmbeddingSize(const Napi::CallbackInfo& info);
  Napi::Value Backend(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  Napi::Value Submit(Napi::Env env, std::unique_ptr<Job> job);
  void JobSettled(Napi::Env env);
  void FinishClose(Napi::Env env);
  void Teardown() noexcept;
  static void OnEnvCleanup(void* self);

  napi_env env_;
  BackendInfo backend_;
  std::vector<std::pair<std::string, RuntimeKind>> modelRuntimes_;  // spec key -> runtime that runs it
  std::string onnxRuntimeMissing_;  // why onnxruntime did not load, if it did not
  bool hasFaceDetector_ = false;
  bool hasPoseEstimator_ = false;
  bool hasObjectDetector_ = false;
  int embeddingSize_ = 0;  // 0: no embedding model
  CompletionFn completion_;
  bool completionLive_ = false;
  bool cleanupHookRegistered_ = false;
  State state_ = State::kOpen;
  size_t inFlight_ = 0;  // submitted, not yet settled (JS thread only)
  std::vector<Napi::Promise::Deferred> closeWaiters_;
  std::unique_ptr<WorkerPool> pool_;
};

NativeEngine::NativeEngine(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeEngine>(info), env_(info.Env()) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) ThrowInvalid(env, "createEngine(options): options must be an object");
  Napi::Object options = info[0].As<Napi::Object>();
  const int workers = static_cast<int>(ReadNumber(options, "workers", "options", 2, 1, 256, true));
  const int threadsPerWorker = static_cast<int>(ReadNumber(options, "threadsPerWorker", "options", 1, 1, 256, true));
  // >= 1: every job passes through the queue, even when a worker is idle.
  const size_t queueLimit = static_cast<size_t>(ReadNumber(options, "queueLimit", "options", 64, 1, 1e6, true));

  // The runtimes first: which one runs a model depends on what loaded and on the device.
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
    const std::string wantedBackend = IsMissing(options.Get("backend")) ? "auto" : ReadString(options, "backend", "options");
    available.backend = SelectBackend(wantedBackend, available.onnxRuntime ? LoadedOnnxRuntime() : nullptr);
  } catch (const std::runtime_error& e) {
    throw Napi::Error::New(env, std::string("edgecv: ") + e.what());
  }
  backend_ = available.backend;
  onnxRuntimeMissing_ = available.onnxRuntimeMissing;

  std::unique_ptr<FaceDetectorSpec> faceSpec = ReadOptionalSpec(options, "faceDetector", available, &ReadFaceDetectorSpec);
  std::unique_ptr<PoseEstimatorSpec> poseSpec = ReadOptionalSpec(options, "poseEstimator", available, &ReadPoseEstimatorSpec);
  std::unique_ptr<ObjectDetectorSpec> objectSpec;
  std::unique_ptr<YoloDetectorSpec> yoloSpec;
  if (IsYoloSpec(options.Get("objectDetector"))) {
    yoloSpec = ReadOptionalSpec(options, "objectDetector", available, &ReadYoloDetectorSpec);
  } else {
    objectSpec = ReadOptionalSpec(options, "objectDetector", available, &ReadObjectDetectorSpec);
  }
  std::unique_ptr<FaceEmbedderSpec> embedderSpec =
      ReadOptionalSpec(options, "faceEmbedder", available, &ReadFaceEmbedderSpec);
  if (faceSpec) modelRuntimes_.emplace_back("faceDetector", faceSpec->model.runtime);
  if (poseSpec) modelRuntimes_.emplace_back("poseEstimator", poseSpec->model.runtime);
  if (objectSpec) modelRuntimes_.emplace_back("objectDetector", objectSpec->model.runtime);
  if (yoloSpec) modelRuntimes_.emplace_back("objectDetector", yoloSpec->model.runtime);
  if (embedderSpec) modelRuntimes_.emplace_back("faceEmbedder", embedderSpec->model.runtime);

  // Load one copy of every model per worker, here on the JS thread, so a bad
  // model fails createEngine() synchronously with a clear message.
  std::vector<std::unique_ptr<WorkerContext>> contexts;
  try {
    const RuntimeOptions runtime{backend_, threadsPerWorker};
    for (int i = 0; i < workers; ++i) {
      auto ctx = std::make_unique<WorkerContext>();
      ctx->index = i;
      ctx->runtime = runtime;
      if (faceSpec) ctx->faceDetector = std::make_unique<FaceDetector>(*faceSpec, runtime);
      if (poseSpec) ctx->poseEstimator = std::make_unique<PoseEstimator>(*poseSpec, runtime);
      if (objectSpec) ctx->objectDetector = std::make_unique<ObjectDetector>(*objectSpec, runtime);
      if (yoloSpec) ctx->yoloDetector = std::make_unique<YoloDetector>(*yoloSpec, runtime);
      if (embedderSpec) {
        ctx->faceEmbedder = std::make_unique<FaceEmbedder>(*embedderSpec, runtime);
        embeddingSize_ = ctx->faceEmbedder->dim();
      }
      contexts.push_back(std::move(ctx));
    }
  } catch (const std::exception& e) {  // includes cv::Exception
    throw Napi::Error::New(env, std::string("edgecv: ") + e.what());
  }
  hasFaceDetector_ = static_cast<bool>(faceSpec);
  hasPoseEstimator_ = static_cast<bool>(poseSpec);
  hasObjectDetector_ = objectSpec || yoloSpec;

  // Unlimited TSFN queue: workers never block on the JS thread. Unref'd while
  // idle so an open engine alone doesn't keep the process alive.
  completion_ = CompletionFn::New(env, "edgecv.completion", 0, 1, this);
  completionLive_ = true;
  completion_.Unref(env);

  try {
    CompletionFn completion = completion_;
    pool_ = std::make_unique<WorkerPool>(std::move(contexts), threadsPerWorker, queueLimit,
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

Napi::Value NativeEngine::DetectFaces(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      return RejectedPromise(env, ErrorCode::kInvalidArgument, "image must be a Buffer or Uint8Array");
    }
    if (!hasFaceDetector_) {
      return RejectedPromise(env, ErrorCode::kInvalidArgument, "this engine was created without a faceDetector");
    }
    const DetectOptions options = ReadDetectOptions(env, info[1]);
    return Submit(env, std::make_unique<FaceDetectJob>(env, info[0].As<Napi::Uint8Array>(), options));
  } catch (const Napi::Error& e) {
    return RejectedPromise(env, e.Value());
  } catch (const std::exception& e) {
    return RejectedPromise(env, ErrorCode::kInternal, e.what());
  }
}

template <typename JobType, typename Options>
Napi::Value NativeEngine::SubmitImageJob(const Napi::CallbackInfo& info, bool hasModel, const char* model,
                                         Options (*readOptions)(Napi::Env, Napi::Value)) {
  Napi::Env env = info.Env();
  try {
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      return RejectedPromise(env, ErrorCode::kInvalidArgument, "image must be a Buffer or Uint8Array");
    }
    if (!hasModel) {
      return RejectedPromise(env, ErrorCode::kInvalidArgument, std::string("this engine was created without a ") + model);
    }
    const Options options = readOptions(env, info[1]);
    return Submit(env, std::make_unique<JobType>(env, info[0].As<Napi::Uint8Array>(), options));
  } catch (const Napi::Error& e) {
    return RejectedPromise(env, e.Value());
  } catch (const std::exception& e) {
    return RejectedPromise(env, ErrorCode::kInternal, e.what());
  }
}

Napi::Value NativeEngine::DetectPoses(const Napi::CallbackInfo& info) {
  return SubmitImageJob<PoseDetectJob>(info, hasPoseEstimator_, "poseEstimator", &ReadPoseOptions);
}

Napi::Value NativeEngine::DetectObjects(const Napi::CallbackInfo& info) {
  return SubmitImageJob<ObjectDetectJob>(info, hasObjectDetector_, "objectDetector", &ReadObjectOptions);
}

Napi::Value NativeEngine::RunModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      return RejectedPromise(env, ErrorCode::kInvalidArgument, "input must be a Float32Array");
    }
    if (!info[1].IsObject()) return RejectedPromise(env, ErrorCode::kInvalidArgument, "model spec must be an object");
    Napi::Object obj = info[1].As<Napi::Object>();
    RawModelSpec spec;
    spec.model.path = ReadString(obj, "path", "model");
    const std::string runtime = IsMissing(obj.Get("runtime")) ? "opencv" : ReadString(obj, "runtime", "model");
    if (runtime == "onnxruntime") {
      if (!LoadedOnnxRuntime()) ThrowInvalid(env, "model.runtime onnxruntime is not available: " + onnxRuntimeMissing_);
      spec.model.runtime = RuntimeKind::kOnnxRuntime;
    } else if (runtime != "opencv") {
      ThrowInvalid(env, "model.runtime must be opencv or onnxruntime");
    }
    spec.outputs = ReadStrings(obj, "outputs", "model");
    Napi::Value shape = obj.Get("inputShape");
    if (!shape.IsArray()) ThrowInvalid(env, "model.inputShape must be an array of positive integers");
    Napi::Array dims = shape.As<Napi::Array>();
    for (uint32_t i = 0; i < dims.Length(); ++i) {
      Napi::Value d = dims.Get(i);
      const double v = d.IsNumber() ? d.As<Napi::Number>().DoubleValue() : -1;
      if (!(v >= 1 && v <= 1 << 20 && std::floor(v) == v)) {
        ThrowInvalid(env, "model.inputShape must be an array of positive integers");
      }
      spec.inputShape.push_back(static_cast<int>(v));
    }
    if (spec.inputShape.empty() || spec.outputs.empty()) {
      ThrowInvalid(env, "model.inputShape and model.outputs must be non-empty");
    }
    return Submit(env, std::make_unique<RunModelJob>(env, info[0].As<Napi::Float32Array>(), std::move(spec)));
  } catch (const Napi::Error& e) {
    return RejectedPromise(env, e.Value());
  } catch (const std::exception& e) {
    return RejectedPromise(env, ErrorCode::kInternal, e.what());
  }
}

Napi::Value NativeEngine::EmbedFace(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      return RejectedPromise(env, ErrorCode::kInvalidArgument, "image must be a Buffer or Uint8Array");
    }
    if (embeddingSize_ == 0) {
      return RejectedPromise(env, ErrorCode::kInvalidArgument, "this engine was created without a faceEmbedder");
    }
    FaceEmbedRequest request = ReadEmbedRequest(env, info[1]);
    if (!request.useRect && !hasFaceDetector_) {
      return RejectedPromise(env, ErrorCode::kInvalidArgument, "this engine has no faceDetector: pass options.rect");
    }
    return Submit(env, std::make_unique<FaceEmbedJob>(env, info[0].As<Napi::Uint8Array>(), std::move(request)));
  } catch (const Napi::Error& e) {
    return RejectedPromise(env, e.Value());
  } catch (const std::exception& e) {
    return RejectedPromise(env, ErrorCode::kInternal, e.what());
  }
}

Napi::Value NativeEngine::SearchGallery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    std::shared_ptr<GalleryIndex> index = ReadGallery(env, info[0]);
    if (!index) ThrowInvalid(env, "gallery must be a gallery made by createGallery()");
    if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      ThrowInvalid(env, "query must be a Float32Array");
    }
    Napi::Float32Array query = info[1].As<Napi::Float32Array>();
    std::vector<float> copy(query.Data(), query.Data() + query.ElementLength());
    return Submit(env, std::make_unique<GallerySearchJob>(env, std::move(copy), index->Snapshot()));
  } catch (const Napi::Error& e) {
    return RejectedPromise(env, e.Value());
  } catch (const std::exception& e) {
    return RejectedPromise(env, ErrorCode::kInternal, e.what());
  }
}

Napi::Value NativeEngine::EmbeddingSize(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), embeddingSize_);
}

Napi::Value NativeEngine::Submit(Napi::Env env, std::unique_ptr<Job> job) {
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
  for (const auto& [key, kind] : modelRuntimes_) runtimes.Set(key, Napi::String::New(env, RuntimeName(kind)));
  out.Set("runtimes", runtimes);
  const OnnxRuntimeInfo* ort = LoadedOnnxRuntime();
  if (ort) {
    Napi::Object info = Napi::Object::New(env);
    info.Set("version", Napi::String::New(env, ort->version));
    info.Set("path", Napi::String::New(env, ort->path));
    info.Set("cuda", Napi::Boolean::New(env, ort->cuda));
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
  return out;
}

// ---- module ------------------------------------------------------------------

struct AddonData {
  Napi::FunctionReference engineConstructor;
  Napi::FunctionReference galleryConstructor;
};

std::shared_ptr<GalleryIndex> ReadGallery(Napi::Env env, Napi::Value value) {
  auto* data = env.GetInstanceData<AddonData>();
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(data->galleryConstructor.Value())) return nullptr;
  return GalleryObject::Unwrap(value.As<Napi::Object>())->index();
}

Napi::Value CreateEngine(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* data = env.GetInstanceData<AddonData>();
  return data->engineConstructor.New({info[0]});  // constructor errors propagate as JS exceptions
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto data = std::make_unique<AddonData>();
  data->engineConstructor = Napi::Persistent(NativeEngine::Define(env));
  Napi::Function gallery = GalleryObject::Define(env);
  data->galleryConstructor = Napi::Persistent(gallery);
  env.SetInstanceData(data.release());  // owned by the env from here on (deleted at teardown)
  exports.Set("createEngine", Napi::Function::New(env, CreateEngine, "createEngine"));
  exports.Set("Gallery", gallery);
  exports.Set("opencvVersion", Napi::String::New(env, CV_VERSION));
  exports.Set("onnxRuntimeCompiledIn", Napi::Boolean::New(env, OnnxRuntimeCompiledIn()));
  return exports;
}

}  // namespace
}  // namespace edgecv

// NODE_API_MODULE pastes the name into an identifier, so it needs an unqualified one.
static Napi::Object InitEdgecv(Napi::Env env, Napi::Object exports) { return edgecv::Init(env, exports); }
NODE_API_MODULE(edgecv, InitEdgecv)
