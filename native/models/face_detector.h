// MediaPipe BlazeFace-family face detector (OpenCV Zoo demo style:
// preprocess -> infer -> postprocess). One generic class configured by a model
// spec, so both the 256px "back" model and the 192px full-range model run here.
//
// Not thread-safe (owns an InferenceModel): one instance per worker thread.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "models/image_model_spec.h"
#include "models/letterbox.h"
#include "runtime/inference_model.h"
#include "runtime/stage_timings.h"

namespace edgecv {

struct AnchorLayer {
  int stride = 0;   // feature-map stride in input pixels
  int anchors = 0;  // anchors per feature-map cell
};

struct FaceDetectorSpec : ImageModelSpec {
  std::vector<AnchorLayer> anchorLayers;
  // Output names in anchor order; concatenating them yields one score (logit)
  // and one 16-float regressor row per anchor.
  std::vector<std::string> scoreOutputs;
  std::vector<std::string> boxOutputs;
};

// Values and defaults are the host's (src/engine/limits.ts): no defaults here.
struct DetectOptions {
  float scoreThreshold = 0;
  float iouThreshold = 0;
  int tiles = 0;  // 0/1 = whole image only; N >= 2 adds an NxN grid of overlapping tiles
};

struct Face {
  // Original-image pixel coordinates; rect is [l, t, r, b) (r/b exclusive).
  std::array<int, 4> rect{};
  float score = 0.f;
  std::array<float, 12> keypoints{};  // 6 x (x, y): eyes, nose, mouth, ear tragions
};

class FaceDetector {
 public:
  static constexpr int kKeypoints = 6;
  static constexpr int kRegressorSize = 4 + 2 * kKeypoints;  // 16

  // Loads the model and runs one warm-up forward pass that validates output
  // names and anchor counts. Throws std::runtime_error with a clear message.
  FaceDetector(const FaceDetectorSpec& spec, const RuntimeOptions& runtime);

  // Faces in `bgr`, in the coordinates of an image of size `full` that `bgr` is a scaled copy of (empty: bgr's
  // own size).
  std::vector<Face> Detect(const cv::Mat& bgr, const DetectOptions& options, StageTimings* timings, cv::Size full = {});

  // The shortest longer side Detect needs of the image under `options`: the whole-image pass sees it at the
  // model's input side; tiles look closer and need every pixel (0).
  int NeededSide(const DetectOptions& options) const { return options.tiles >= 2 ? 0 : spec_.inputSize; }

 private:
  // A candidate in original-image float coordinates, before NMS.
  struct Candidate {
    float x1, y1, x2, y2;
    float score;
    std::array<float, 12> keypoints;
  };
  // The candidates of one letterboxed pass (whole image or one tile) that lie inside `keep`.
  std::vector<Candidate> Postprocess(const std::vector<cv::Mat>& outputs, const Letterbox& box, float scoreThreshold,
                                     const cv::Rect2f& keep) const;

  static std::vector<Candidate> WeightedNms(std::vector<Candidate> candidates, float iouThreshold);
  static std::vector<cv::Rect> TileGrid(const cv::Size& size, int tiles);

  FaceDetectorSpec spec_;
  std::unique_ptr<InferenceModel> model_;
  std::vector<std::string> outputNames_;  // scoreOutputs then boxOutputs
  std::vector<cv::Point2f> anchors_;      // normalized centres, in anchor order
};

}  // namespace edgecv
