#include "bindings/options.h"

#include <cmath>
#include <sstream>
#include <utility>
#include <vector>

#include "bindings/addon_data.h"
#include "jobs/js_errors.h"
#include "gallery/gallery_object.h"

namespace edgecv {
namespace {

// ---- safety bounds (not policy: src/engine/limits.ts owns the ranges and is narrower) -------------------------
constexpr double kMaxThreads = 256;         // workers, threadsPerWorker: each is an OS thread
constexpr double kMaxQueueLimit = 1 << 30;  // queued jobs; fits a size_t anywhere
constexpr double kMaxInputSize = 8192;      // a square input's side: an 8192^2 RGB float blob is 805 MB
constexpr double kMaxCount = 1 << 20;       // classes, maxObjects, maxPoses, ...: an int with room to multiply
constexpr double kMaxTiles = 64;            // an NxN grid costs N*N + 1 inferences per call
constexpr double kMaxCropScale = 64;        // box side x crop scale stays well inside an int
constexpr double kMaxRectCoordinate = 1e9;  // options.rect values fit an int
constexpr double kMaxDim = 1 << 20;         // one dimension of runModel()'s input shape
constexpr double kHuge = 1e300;             // finite is all a float option needs

std::string Shortest(double d) {
  std::ostringstream out;
  out << d;  // 256, 0.5, 1e+300
  return out.str();
}

// A required number in [min, max] (an integer when `integer`).
double ReadNumber(Napi::Object obj, const char* key, const std::string& where, double min, double max,
                  bool integer = false) {
  Napi::Env env = obj.Env();
  Napi::Value v = obj.Get(key);
  if (IsMissing(v)) ThrowInvalid(env, where + "." + key + " is required");
  if (!v.IsNumber()) ThrowInvalid(env, where + "." + key + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d < min || d > max || (integer && std::floor(d) != d)) {
    ThrowInvalid(env, where + "." + key + " must be " + (integer ? "an integer" : "a number") + " in [" +
                          Shortest(min) + ", " + Shortest(max) + "]");
  }
  return d;
}

int ReadInt(Napi::Object obj, const char* key, const std::string& where, double min, double max) {
  return static_cast<int>(ReadNumber(obj, key, where, min, max, true));
}

// A required finite number read as a float (thresholds: their range is the host's).
float ReadFloat(Napi::Object obj, const char* key, const std::string& where) {
  return static_cast<float>(ReadNumber(obj, key, where, -kHuge, kHuge));
}

bool ReadBool(Napi::Object obj, const char* key, const std::string& where) {
  Napi::Value v = obj.Get(key);
  if (!v.IsBoolean()) ThrowInvalid(obj.Env(), where + "." + key + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
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

// The options object of a call: required (the host always passes one).
Napi::Object ReadCallOptions(Napi::Env env, Napi::Value value, const char* method) {
  if (!value.IsObject()) ThrowInvalid(env, std::string(method) + " options must be an object");
  return value.As<Napi::Object>();
}

// A spec's optional `device`: "gpu" runs it on onnxruntime's WebGPU provider, which must be usable; "cpu" or none,
// the backend's device.
bool ReadGpuDevice(Napi::Object obj, const std::string& where, const BackendInfo& backend) {
  if (IsMissing(obj.Get("device"))) return false;
  const std::string device = ReadString(obj, "device", where);
  if (device != "cpu" && device != "gpu") ThrowInvalid(obj.Env(), where + ".device must be cpu or gpu");
  if (device == "gpu" && !backend.webGpu) {
    ThrowInvalid(obj.Env(), where + ": device gpu is not available: " +
                                (backend.webGpuMissing.empty() ? "the engine's backend is not gpu or auto"
                                                               : backend.webGpuMissing));
  }
  return device == "gpu";
}

// A spec's device (ReadGpuDevice) and, with gpu, its optional `gpuGraph`: "optimized" (default) or "basic" (no
// fusions).
void ReadDevice(Napi::Object obj, const std::string& where, const BackendInfo& backend, ModelSource* source) {
  source->gpu = ReadGpuDevice(obj, where, backend);
  if (IsMissing(obj.Get("gpuGraph"))) return;
  const std::string graph = ReadString(obj, "gpuGraph", where);
  if (graph != "optimized" && graph != "basic") ThrowInvalid(obj.Env(), where + ".gpuGraph must be optimized or basic");
  source->gpuFusions = graph == "optimized";
}

// `runtime` of a spec: "opencv" runs `path` on OpenCV DNN, "onnxruntime" runs `ortPath` on onnxruntime, and
// "auto" onnxruntime when it is loaded and can drive the backend's device, else OpenCV. A GPU net runs on onnxruntime.
ModelSource ReadModelSource(Napi::Object obj, const std::string& where, const RuntimeAvailability& available) {
  Napi::Env env = obj.Env();
  const std::string opencvPath = ReadString(obj, "path", where);
  const std::string ortPath = ReadString(obj, "ortPath", where);
  const std::string wanted = ReadString(obj, "runtime", where);
  if (wanted != "auto" && wanted != "opencv" && wanted != "onnxruntime") {
    ThrowInvalid(env, where + ".runtime must be one of auto, opencv, onnxruntime");
  }
  const bool deviceOk = available.backend.kind == BackendKind::kCpu || available.backend.onnxRuntimeCuda;
  if (wanted == "onnxruntime" && !available.onnxRuntime) {
    ThrowInvalid(env, where + ": runtime onnxruntime is not available: " + available.onnxRuntimeMissing);
  }
  ModelSource source;
  ReadDevice(obj, where, available.backend, &source);
  if (source.gpu && wanted == "opencv") ThrowInvalid(env, where + ": device gpu runs on onnxruntime, not opencv");
  if (source.gpu || wanted == "onnxruntime" || (wanted == "auto" && available.onnxRuntime && deviceOk)) {
    source.path = ortPath;
    source.runtime = RuntimeKind::kOnnxRuntime;
  } else {
    source.path = opencvPath;
  }
  return source;
}

// What every image model's spec has: file and runtime, input side and input normalization.
void ReadImageModelSpec(Napi::Object obj, const std::string& where, const RuntimeAvailability& available,
                        ImageModelSpec* spec) {
  spec->model = ReadModelSource(obj, where, available);
  spec->inputSize = ReadInt(obj, "inputSize", where, 1, kMaxInputSize);
  spec->model.timingShape = {1, 3, spec->inputSize, spec->inputSize};
  spec->meanValue = ReadNumber(obj, "meanValue", where, -kHuge, kHuge);
  spec->scale = ReadNumber(obj, "scale", where, -kHuge, kHuge);
  spec->swapRB = ReadBool(obj, "swapRB", where);
}

FaceDetectorSpec ReadFaceDetectorSpec(Napi::Object obj, const std::string& where,
                                      const RuntimeAvailability& available) {
  FaceDetectorSpec spec;
  ReadImageModelSpec(obj, where, available, &spec);
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
    layer.stride = ReadInt(item.As<Napi::Object>(), "stride", at, 1, kMaxInputSize);
    layer.anchors = ReadInt(item.As<Napi::Object>(), "anchors", at, 1, kMaxCount);
    spec.anchorLayers.push_back(layer);
  }
  spec.scoreOutputs = ReadStrings(obj, "scoreOutputs", where);
  spec.boxOutputs = ReadStrings(obj, "boxOutputs", where);
  return spec;
}

PoseEstimatorSpec ReadPoseEstimatorSpec(Napi::Object obj, const std::string& where,
                                        const RuntimeAvailability& available) {
  PoseEstimatorSpec spec;
  ReadImageModelSpec(obj, where, available, &spec);
  spec.outputs = ReadStrings(obj, "outputs", where);
  if (spec.outputs.size() != PoseEstimator::kOutputs) ThrowInvalid(obj.Env(), where + ".outputs must name 6 outputs");
  return spec;
}

// The CenterNet spec: an object model with kind "centernet".
CenterNetDetectorSpec ReadCenterNetDetectorSpec(Napi::Object obj, const std::string& where,
                                                const RuntimeAvailability& available) {
  CenterNetDetectorSpec spec;
  ReadImageModelSpec(obj, where, available, &spec);
  spec.heatmapOutput = ReadString(obj, "heatmapOutput", where);
  spec.boxOutput = ReadString(obj, "boxOutput", where);
  spec.classes = ReadInt(obj, "classes", where, 1, kMaxCount);
  return spec;
}

// The YOLO spec: an object model with kind "yolo" (layout "grid" or "decoded").
YoloDetectorSpec ReadYoloDetectorSpec(Napi::Object obj, const std::string& where,
                                      const RuntimeAvailability& available) {
  Napi::Env env = obj.Env();
  YoloDetectorSpec spec;
  ReadImageModelSpec(obj, where, available, &spec);
  const std::string layout = ReadString(obj, "layout", where);
  if (layout != "grid" && layout != "decoded") ThrowInvalid(env, where + ".layout must be \"grid\" or \"decoded\"");
  spec.layout = layout == "grid" ? YoloDetectorSpec::Layout::kGrid : YoloDetectorSpec::Layout::kDecoded;
  spec.outputs = ReadStrings(obj, "outputs", where);
  spec.classes = ReadInt(obj, "classes", where, 1, kMaxCount);
  spec.openInputSize = ReadBool(obj, "openInputSize", where);
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
  spec.padValue = ReadNumber(obj, "padValue", where, -kHuge, kHuge);
  spec.iouThreshold = ReadFloat(obj, "iouThreshold", where);
  return spec;
}

FaceEmbedderSpec ReadFaceEmbedderSpec(Napi::Object obj, const std::string& where,
                                      const RuntimeAvailability& available) {
  FaceEmbedderSpec spec;
  ReadImageModelSpec(obj, where, available, &spec);
  spec.output = ReadString(obj, "output", where);
  return spec;
}

// An optional model spec of createEngine()'s options: null when absent, else read by `read`.
template <typename Spec>
std::unique_ptr<Spec> ReadOptionalSpec(Napi::Object options, const char* key, const RuntimeAvailability& available,
                                       Spec (*read)(Napi::Object, const std::string&, const RuntimeAvailability&)) {
  Napi::Value value = options.Get(key);
  if (IsMissing(value)) return nullptr;
  if (!value.IsObject()) ThrowInvalid(options.Env(), std::string("options.") + key + " must be an object");
  return std::make_unique<Spec>(read(value.As<Napi::Object>(), key, available));
}

// An object detector spec of createEngine()'s options (`objectDetector`, `personDetector`): empty when absent,
// else of the family its required `kind` names.
std::optional<ObjectDetectorSpec> ReadOptionalObjectDetectorSpec(Napi::Object options, const char* key,
                                                                 const RuntimeAvailability& available) {
  Napi::Value value = options.Get(key);
  if (IsMissing(value)) return std::nullopt;
  if (!value.IsObject()) ThrowInvalid(options.Env(), std::string("options.") + key + " must be an object");
  Napi::Object obj = value.As<Napi::Object>();
  const std::string kind = ReadString(obj, "kind", key);
  if (kind == "centernet") return ReadCenterNetDetectorSpec(obj, key, available);
  if (kind == "yolo") return ReadYoloDetectorSpec(obj, key, available);
  ThrowInvalid(options.Env(), std::string(key) + ".kind must be \"centernet\" or \"yolo\"");
}

}  // namespace

bool IsMissing(const Napi::Value& v) { return v.IsUndefined() || v.IsNull(); }

std::string ReadString(Napi::Object obj, const char* key, const std::string& where) {
  Napi::Value v = obj.Get(key);
  if (IsMissing(v)) ThrowInvalid(obj.Env(), where + "." + key + " is required");
  if (!v.IsString()) ThrowInvalid(obj.Env(), where + "." + key + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

PoolOptions ReadPoolOptions(Napi::Object options) {
  PoolOptions pool;
  pool.workers = ReadInt(options, "workers", "options", 1, kMaxThreads);
  pool.threadsPerWorker = ReadInt(options, "threadsPerWorker", "options", 1, kMaxThreads);
  // >= 1: every job passes through the queue, even when a worker is idle.
  pool.queueLimit = static_cast<size_t>(ReadNumber(options, "queueLimit", "options", 1, kMaxQueueLimit, true));
  const std::string idleCores = ReadString(options, "idleCores", "options");
  if (idleCores != "lend" && idleCores != "keep")
    ThrowInvalid(options.Env(), "options.idleCores must be \"lend\" or \"keep\"");
  pool.lendIdleCores = idleCores == "lend";
  // Optional (true when left out): only tests and tools turn it off.
  pool.warmUp = IsMissing(options.Get("warmUp")) || ReadBool(options, "warmUp", "options");
  return pool;
}

ModelSpecs ReadModelSpecs(Napi::Object options, const RuntimeAvailability& available) {
  ModelSpecs specs;
  specs.faceDetector = ReadOptionalSpec(options, "faceDetector", available, &ReadFaceDetectorSpec);
  specs.poseEstimator = ReadOptionalSpec(options, "poseEstimator", available, &ReadPoseEstimatorSpec);
  specs.objectDetector = ReadOptionalObjectDetectorSpec(options, "objectDetector", available);
  specs.personDetector = ReadOptionalObjectDetectorSpec(options, "personDetector", available);
  specs.faceEmbedder = ReadOptionalSpec(options, "faceEmbedder", available, &ReadFaceEmbedderSpec);
  return specs;
}

DetectOptions ReadDetectOptions(Napi::Env env, Napi::Value value) {
  Napi::Object obj = ReadCallOptions(env, value, "detectFaces");
  DetectOptions options;
  options.scoreThreshold = ReadFloat(obj, "scoreThreshold", "options");
  options.iouThreshold = ReadFloat(obj, "iouThreshold", "options");
  options.tiles = ReadInt(obj, "tiles", "options", 0, kMaxTiles);
  return options;
}

PoseOptions ReadPoseOptions(Napi::Env env, Napi::Value value) {
  Napi::Object obj = ReadCallOptions(env, value, "detectPoses");
  PoseOptions options;
  options.scoreThreshold = ReadFloat(obj, "scoreThreshold", "options");
  options.maxPoses = ReadInt(obj, "maxPoses", "options", 1, kMaxCount);
  options.personClassId = ReadInt(obj, "personClassId", "options", -1, kMaxCount);
  options.personThreshold = ReadFloat(obj, "personThreshold", "options");
  return options;
}

ObjectCallOptions ReadObjectOptions(Napi::Env env, Napi::Value value) {
  Napi::Object obj = ReadCallOptions(env, value, "detectObjects");
  ObjectCallOptions options;
  options.detect.scoreThreshold = ReadFloat(obj, "scoreThreshold", "options");
  options.detect.maxObjects = ReadInt(obj, "maxObjects", "options", 1, kMaxCount);
  options.onPersonDetector = ReadBool(obj, "onPersonDetector", "options");
  return options;
}

FaceEmbedRequest ReadEmbedRequest(Napi::Env env, Napi::Value value) {
  Napi::Object obj = ReadCallOptions(env, value, "embedFace");
  FaceEmbedRequest request;
  request.detect = ReadDetectOptions(env, obj.Get("detect"));
  request.cropScale = ReadNumber(obj, "cropScale", "options", 1e-3, kMaxCropScale);
  request.keepCrop = ReadBool(obj, "keepCrop", "options");
  request.align = ReadBool(obj, "align", "options");
  request.rotatedPasses = ReadBool(obj, "rotatedPasses", "options");
  Napi::Value keypoints = obj.Get("keypoints");
  if (!IsMissing(keypoints)) {
    const size_t count = request.keypoints.size();
    if (!keypoints.IsArray() || keypoints.As<Napi::Array>().Length() != count) {
      ThrowInvalid(env, "options.keypoints must hold " + std::to_string(count) + " numbers");
    }
    Napi::Array arr = keypoints.As<Napi::Array>();
    for (uint32_t i = 0; i < count; ++i) {
      Napi::Value v = arr.Get(i);
      const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
      if (!(std::isfinite(d) && std::fabs(d) < kMaxRectCoordinate))
        ThrowInvalid(env, "options.keypoints must hold finite numbers");
      request.keypoints[i] = static_cast<float>(d);
    }
    request.hasKeypoints = true;
  }
  Napi::Value rect = obj.Get("rect");
  if (!IsMissing(rect)) {
    if (!rect.IsArray() || rect.As<Napi::Array>().Length() != 4) ThrowInvalid(env, "options.rect must be [l, t, r, b]");
    Napi::Array arr = rect.As<Napi::Array>();
    for (uint32_t i = 0; i < 4; ++i) {
      Napi::Value v = arr.Get(i);
      const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
      if (!(std::isfinite(d) && std::floor(d) == d && std::fabs(d) < kMaxRectCoordinate)) {
        ThrowInvalid(env, "options.rect must hold 4 integers");
      }
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

RawModelSpec ReadRawModelSpec(Napi::Object obj, const RuntimeAvailability& available) {
  Napi::Env env = obj.Env();
  RawModelSpec spec;
  spec.model.path = ReadString(obj, "path", "model");
  const std::string runtime = ReadString(obj, "runtime", "model");
  if (runtime == "onnxruntime") {
    if (!available.onnxRuntime)
      ThrowInvalid(env, "model.runtime onnxruntime is not available: " + available.onnxRuntimeMissing);
    spec.model.runtime = RuntimeKind::kOnnxRuntime;
  } else if (runtime != "opencv") {
    ThrowInvalid(env, "model.runtime must be opencv or onnxruntime");
  }
  ReadDevice(obj, "model", available.backend, &spec.model);
  if (spec.model.gpu && spec.model.runtime != RuntimeKind::kOnnxRuntime)
    ThrowInvalid(env, "model: device gpu runs on onnxruntime");
  spec.outputs = ReadStrings(obj, "outputs", "model");
  Napi::Value shape = obj.Get("inputShape");
  if (!shape.IsArray()) ThrowInvalid(env, "model.inputShape must be an array of positive integers");
  Napi::Array dims = shape.As<Napi::Array>();
  for (uint32_t i = 0; i < dims.Length(); ++i) {
    Napi::Value d = dims.Get(i);
    const double v = d.IsNumber() ? d.As<Napi::Number>().DoubleValue() : -1;
    if (!(v >= 1 && v <= kMaxDim && std::floor(v) == v))
      ThrowInvalid(env, "model.inputShape must be an array of positive integers");
    spec.inputShape.push_back(static_cast<int>(v));
  }
  if (spec.inputShape.empty() || spec.outputs.empty())
    ThrowInvalid(env, "model.inputShape and model.outputs must be non-empty");
  spec.model.timingShape = spec.inputShape;
  return spec;
}

std::shared_ptr<GalleryIndex> ReadGallery(Napi::Env env, Napi::Value value) {
  auto* data = env.GetInstanceData<AddonData>();
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(data->galleryConstructor.Value())) return nullptr;
  return GalleryObject::Unwrap(value.As<Napi::Object>())->index();
}

}  // namespace edgecv
