// Per-worker state. Each worker thread owns exactly one WorkerContext and is the
// only thread that touches it, so the models inside need no locking (neither a
// cv::dnn::Net nor our use of an onnxruntime session is shared). A new detection model = one
// more member here, one more DetectJob kind (jobs/detect_job.h), one more spec reader
// (bindings/options.cc) and engine method; the queue/promise plumbing is shared.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/face_detector.h"
#include "models/face_embedder.h"
#include "models/object_detector.h"
#include "models/pose_estimator.h"
#include "runtime/inference_model.h"
#include "models/yolo_detector.h"

namespace edgecv {

// An object model of either family (at most one of the two is set; neither when the engine has none).
struct ObjectModel {
  std::unique_ptr<ObjectDetector> centernet;
  std::unique_ptr<YoloDetector> yolo;

  explicit operator bool() const { return centernet || yolo; }
  // Requires a model (operator bool).
  std::vector<DetectedObject> Detect(const cv::Mat& bgr, const ObjectOptions& options, StageTimings* timings) {
    return yolo ? yolo->Detect(bgr, options, timings) : centernet->Detect(bgr, options, timings);
  }
};

struct WorkerContext {
  RuntimeOptions runtime;
  std::unique_ptr<FaceDetector> faceDetector;    // null if the engine has no face model
  std::unique_ptr<PoseEstimator> poseEstimator;  // null if the engine has no pose model
  ObjectModel objectDetector;                    // the objects route's model
  ObjectModel personDetector;                    // finds people for pose when set; else objectDetector does
  std::unique_ptr<FaceEmbedder> faceEmbedder;    // null if the engine has no embedding model

  // Raw-tensor models for runModel(), loaded on first use by this worker (one per file, runtime and outputs).
  // Throws JobError(INTERNAL) if the file cannot be loaded.
  InferenceModel& RawModel(const ModelSource& source, const std::vector<std::string>& outputs);

 private:
  std::map<std::string, std::unique_ptr<InferenceModel>> rawModels_;
};

}  // namespace edgecv
