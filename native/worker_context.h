// Per-worker state. Each worker thread owns exactly one WorkerContext and is the
// only thread that touches it, so the cv::dnn::Net instances inside need no
// locking (a Net is not thread-safe). A new model = one more member here, one
// more Job subclass, one more engine method; the queue/promise plumbing is shared.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <opencv2/dnn.hpp>

#include "backend.h"
#include "face_detector.h"
#include "object_detector.h"
#include "pose_estimator.h"
#include "yolo_detector.h"
#include "face_embedder.h"

namespace edgecv {

struct WorkerContext {
  int index = 0;
  BackendInfo backend;
  std::unique_ptr<FaceDetector> faceDetector;  // null if the engine has no face model
  std::unique_ptr<PoseEstimator> poseEstimator;    // null if the engine has no pose model
  std::unique_ptr<ObjectDetector> objectDetector;  // centernet; null if the engine has no such object model
  std::unique_ptr<YoloDetector> yoloDetector;      // null if the engine's object model is not a YOLO
  std::unique_ptr<FaceEmbedder> faceEmbedder;  // null if the engine has no embedding model

  // Raw-tensor models for runModel(), loaded on first use by this worker.
  // Throws JobError(INTERNAL) if the file cannot be loaded.
  cv::dnn::Net& RawNet(const std::string& path);

 private:
  std::map<std::string, cv::dnn::Net> rawNets_;
};

}  // namespace edgecv
