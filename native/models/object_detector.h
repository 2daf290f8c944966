// What both object detector families share: the per-call options, a found object, and the interface the engine
// holds them by (native/models/centernet_detector.h, native/models/yolo_detector.h). Which family a spec builds
// is its `kind`.
#pragma once

#include <vector>

#include <opencv2/core.hpp>

#include "models/box.h"
#include "runtime/stage_timings.h"

namespace edgecv {

// Values and defaults are the host's (src/engine/limits.ts): no defaults here.
struct ObjectOptions {
  float scoreThreshold = 0;
  int maxObjects = 0;
};

// detectObjects(): the detector's options, and which of the worker's object models runs them. The person
// detector, when the engine has one, is the object model at a smaller input size (src/engine/engine.ts
// decides when an image is small enough for it).
struct ObjectCallOptions {
  ObjectOptions detect;
  bool onPersonDetector = false;
};

struct DetectedObject {
  Box rect{};  // [l, t, r, b] in original-image pixels, not clipped
  int classId = 0;
  float score = 0;
};

// Not thread-safe (each owns an InferenceModel): one instance per worker thread.
class ObjectDetector {
 public:
  virtual ~ObjectDetector() = default;

  // At most options.maxObjects objects scoring at least options.scoreThreshold, best first.
  virtual std::vector<DetectedObject> Detect(const cv::Mat& bgr, const ObjectOptions& options,
                                             StageTimings* timings) = 0;

  // Warms the model at every input shape Detect() can run it at beyond its square (which loading warmed).
  virtual void WarmShapes() {}

  // The side of the square the image is fitted into: a photo's longer side is shrunk to it.
  virtual int InputSide() const = 0;
};

}  // namespace edgecv
