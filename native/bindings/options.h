// createEngine()'s options and the per-call options of the engine methods, read from JS on the JS thread.
//
// The host (src/engine/options.ts, with the values of src/engine/limits.ts) validates every option and owns
// every default and range; it always passes what is read here as required. The bounds checked here are safety bounds
// only: they keep a bad call from overflowing an int or exhausting memory, and they are deliberately wider than the
// host's policy. Every failure throws a TypeError with code INVALID_ARGUMENT (js_errors.h).
#pragma once

#include <napi.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "jobs/face_embed_job.h"  // FaceEmbedRequest
#include "jobs/run_model_job.h"   // RawModelSpec
#include "models/face_detector.h"
#include "models/centernet_detector.h"
#include "models/face_embedder.h"
#include "models/pose_estimator.h"
#include "models/yolo_detector.h"
#include "runtime/backend.h"

namespace edgecv {

bool IsMissing(const Napi::Value& v);
std::string ReadString(Napi::Object obj, const char* key, const std::string& where);

// The worker pool's shape.
struct PoolOptions {
  int workers = 0;
  int threadsPerWorker = 0;
  size_t queueLimit = 0;
  bool lendIdleCores = false;  // idleCores: "lend" | "keep" (runtime/idle_cores.h)
  bool warmUp = true;          // false: no WarmUpAll at open (jobs/warm_up.h)
};
PoolOptions ReadPoolOptions(Napi::Object options);

// What the engine can run models on, known before any spec is read: the backend, and whether onnxruntime loaded.
struct RuntimeAvailability {
  BackendInfo backend;
  bool onnxRuntime = false;
  std::string onnxRuntimeMissing;  // why not, when it did not load
};

// An object detector's spec: the family its required `kind` names ("centernet" or "yolo").
using ObjectDetectorSpec = std::variant<CenterNetDetectorSpec, YoloDetectorSpec>;

// What every spec of either family has: its file, runtime and input.
inline const ImageModelSpec& ImageSpecOf(const ObjectDetectorSpec& spec) {
  return std::visit([](const ImageModelSpec& s) -> const ImageModelSpec& { return s; }, spec);
}

// The model specs of createEngine()'s options; empty where the engine has no such model.
struct ModelSpecs {
  std::unique_ptr<FaceDetectorSpec> faceDetector;
  std::unique_ptr<PoseEstimatorSpec> poseEstimator;
  std::optional<ObjectDetectorSpec> objectDetector;
  std::optional<ObjectDetectorSpec> personDetector;  // finds people for pose's persons mode; none: objectDetector does
  std::unique_ptr<FaceEmbedderSpec> faceEmbedder;
};
ModelSpecs ReadModelSpecs(Napi::Object options, const RuntimeAvailability& available);

DetectOptions ReadDetectOptions(Napi::Env env, Napi::Value value);
PoseOptions ReadPoseOptions(Napi::Env env, Napi::Value value);
ObjectCallOptions ReadObjectOptions(Napi::Env env, Napi::Value value);
FaceEmbedRequest ReadEmbedRequest(Napi::Env env, Napi::Value value);
// The gallery behind a JS value made by createGallery(), or null if it is something else.
std::shared_ptr<GalleryIndex> ReadGallery(Napi::Env env, Napi::Value value);
// runModel()'s spec; onnxruntime must have loaded when it asks for it, the WebGPU provider for device gpu.
RawModelSpec ReadRawModelSpec(Napi::Object obj, const RuntimeAvailability& available);

}  // namespace edgecv
