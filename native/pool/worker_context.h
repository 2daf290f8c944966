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

namespace edgecv {

struct WorkerContext {
  RuntimeOptions runtime;
  std::unique_ptr<FaceDetector> faceDetector;      // null if the engine has no face model
  std::unique_ptr<PoseEstimator> poseEstimator;    // null if the engine has no pose model
  std::unique_ptr<ObjectDetector> objectDetector;  // the objects route's model (CenterNet or YOLO); null if none
  std::unique_ptr<ObjectDetector> personDetector;  // finds people for pose when set; else objectDetector does
  std::unique_ptr<FaceEmbedder> faceEmbedder;      // null if the engine has no embedding model

  // Raw-tensor models for runModel(), loaded on first use by this worker (one per file, runtime and outputs).
  // Throws JobError(INTERNAL) if the file cannot be loaded.
  InferenceModel& RawModel(const ModelSource& source, const std::vector<std::string>& outputs);

 private:
  std::map<std::string, std::unique_ptr<InferenceModel>> rawModels_;
};

}  // namespace edgecv
