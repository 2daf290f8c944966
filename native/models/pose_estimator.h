// MoveNet MultiPose (preprocess -> infer -> postprocess). The converted graph is cut
// before the model's own post-processing, which Postprocess() reproduces from the original TF.js graph:
// centre-heatmap peaks (5x5 max-pool NMS), top-k people, keypoints regressed from each centre and then
// snapped to the keypoint heatmap weighted by the distance to the regressed point, plus sub-cell offsets.
//
// Not thread-safe (owns an InferenceModel): one instance per worker thread.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "models/box.h"
#include "models/image_model_spec.h"
#include "models/letterbox.h"
#include "runtime/inference_model.h"
#include "runtime/stage_timings.h"

namespace edgecv {

struct PoseEstimatorSpec : ImageModelSpec {
  // Output names in this order: centre logits [1,G,G,1], box scale [1,G,G,2], box offset [1,G,G,2],
  // keypoint heatmap logits [1,G,G,K], keypoint regression [1,G,G,2K], keypoint offsets [1,G,G,2K].
  std::vector<std::string> outputs;
};

// Values and defaults are the host's (src/engine/limits.ts): no defaults here.
struct PoseOptions {
  float scoreThreshold = 0;  // person score: centre score x mean of its confident keypoint scores
  int maxPoses = 0;
  // >= 0: find people with the engine's object detector first (this class id, at this score), and pose each
  // one in a crop around its box (top-down): people too small or too crowded for one whole-image pass are
  // found. -1: one whole-image pass.
  int personClassId = -1;
  float personThreshold = 0;
};

struct Keypoint {
  float x = 0, y = 0;  // original-image pixels, not clipped
  float score = 0;
};

struct Pose {
  static constexpr int kKeypoints = 17;  // COCO order: nose, eyes, ears, shoulders, elbows, wrists, hips, knees, ankles
  float score = 0;
  Box box{};  // [l, t, r, b] in original-image pixels
  std::array<Keypoint, kKeypoints> keypoints{};
};

class PoseEstimator {
 public:
  static constexpr int kOutputs = 6;

  // Loads the model and runs one warm-up pass that checks the output shapes. Throws std::runtime_error.
  PoseEstimator(const PoseEstimatorSpec& spec, const RuntimeOptions& runtime);

  std::vector<Pose> Detect(const cv::Mat& bgr, const PoseOptions& options, StageTimings* timings);

  // One pose per person box [l, t, r, b] (image pixels), in the boxes' order: the model runs on a square crop
  // around each box (2x its longer side), and keeps the pose whose box overlaps the person's most; a crop
  // already run that shows a later person well gives that person's pose instead (pose_estimator.cc). Each pose
  // goes to one person; boxes where none is found give none. Best first.
  std::vector<Pose> DetectInBoxes(const cv::Mat& bgr, const std::vector<Box>& boxes, const PoseOptions& options,
                                  StageTimings* timings);

  // The longer side a copy of the image (of size `image`, where the boxes are) needs for DetectInBoxes() to shrink
  // every box's crop into the model's input, none blown up (0 for no boxes).
  int SideForCrops(const std::vector<Box>& boxes, cv::Size image) const;

 private:
  std::vector<Pose> Postprocess(const std::vector<cv::Mat>& outputs, const Letterbox& box,
                                const PoseOptions& options) const;

  PoseEstimatorSpec spec_;
  std::unique_ptr<InferenceModel> model_;
  int grid_ = 0;  // G: heatmap side (S / 4)
};

}  // namespace edgecv
