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

#include "runtime/inference_model.h"
#include "runtime/stage_timings.h"

namespace edgecv {

struct AnchorLayer {
  int stride = 0;   // feature-map stride in input pixels
  int anchors = 0;  // anchors per feature-map cell
};

struct FaceDetectorSpec {
  ModelSource model;  // ONNX file (NCHW input) and the runtime that runs it
  int inputSize = 0;      // square input side S
  std::vector<AnchorLayer> anchorLayers;
  // Output names in anchor order; concatenating them yields one score (logit)
  // and one 16-float regressor row per anchor.
  std::vector<std::string> scoreOutputs;
  std::vector<std::string> boxOutputs;
  double meanValue = 127.5;        // input = (pixel - mean) * scale
  double scale = 1.0 / 127.5;
  bool swapRB = true;              // decoded images are BGR; true feeds RGB
};

struct DetectOptions {
  float scoreThreshold = 0.5f;
  float iouThreshold = 0.3f;
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

  std::vector<Face> Detect(const cv::Mat& bgr, const DetectOptions& options, StageTimings* timings);

 private:
  // A candidate in original-image float coordinates, before NMS.
  struct Candidate {
    float x1, y1, x2, y2;
    float score;
    std::array<float, 12> keypoints;
  };
  // Where a letterboxed network input sits in the original image.
  struct Letterbox {
    cv::Rect region;  // the image region (whole image or one tile)
    float scaleX = 1, scaleY = 1;  // region pixels -> network input pixels
    int padX = 0, padY = 0;        // network input padding left/top
  };

  Letterbox Preprocess(const cv::Mat& bgr, const cv::Rect& region, cv::Mat* blob) const;
  void Infer(const cv::Mat& blob, std::vector<cv::Mat>* outputs);
  void Postprocess(const std::vector<cv::Mat>& outputs, const Letterbox& box, float scoreThreshold,
                   const cv::Rect2f& keep, std::vector<Candidate>* candidates) const;

  static std::vector<Candidate> WeightedNms(std::vector<Candidate> candidates, float iouThreshold);
  static std::vector<cv::Rect> TileGrid(const cv::Size& size, int tiles);

  FaceDetectorSpec spec_;
  std::unique_ptr<InferenceModel> model_;
  std::vector<std::string> outputNames_;  // scoreOutputs then boxOutputs
  std::vector<cv::Point2f> anchors_;      // normalized centres, in anchor order
};

}  // namespace edgecv
