// Per-worker state. Each worker thread owns exactly one WorkerContext and is the
// only thread that touches it, so the cv::dnn::Net instances inside need no
// locking (a Net is not thread-safe). A new model = one more member here, one
// more Job subclass, one more engine method; the queue/promise plumbing is shared.
#pragma once

#include <memory>

#include "face_detector.h"

namespace edgecv {

struct WorkerContext {
  int index = 0;
  std::unique_ptr<FaceDetector> faceDetector;  // null if the engine has no face model
};

}  // namespace edgecv
