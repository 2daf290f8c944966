// YOLOv5-style object detector (OpenCV Zoo style: preprocess -> infer -> postprocess).
//
// Two output layouts:
//  - kGrid: the raw head convolutions, one [1,H,W,anchors*(5+classes)] tensor per stride (the converted
//    yolov5s is cut there); Postprocess() applies sigmoid, grid offsets and anchors as YOLOv5 v6 does.
//  - kDecoded: one [1,N,5+classes] tensor of already-decoded rows (cx, cy, w, h, objectness, class
//    scores), YOLOv5's own export layout, for operators' own models. Boxes in input pixels (PyTorch's
//    export), or in 0..1 (TF exports): which one is a fact about the file, read once from the warm-up pass.
// Then: score = objectness x best class score, class-aware NMS (spec.iouThreshold), letterbox undone.
//
// Not thread-safe (owns an InferenceModel): one instance per worker thread. All network access is in Infer().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "models/image_model_spec.h"
#include "models/letterbox.h"
#include "models/object_detector.h"
#include "runtime/inference_model.h"
#include "runtime/stage_timings.h"

namespace edgecv {

struct YoloDetectorSpec : ImageModelSpec {
  enum class Layout { kGrid, kDecoded };
  Layout layout = Layout::kGrid;
  std::vector<std::string> outputs;         // kGrid: one per stride; kDecoded: one, or none for the network's own
  std::vector<int> strides;                 // kGrid: input pixels per cell of each output
  std::vector<std::vector<float>> anchors;  // kGrid: per stride, (w, h) pairs in input pixels
  int classes = 0;
  // Values are the host's (src/engine/limits.ts): no defaults here.
  double padValue = 0;  // letterbox border value
  // kGrid only: the onnxruntime file takes any input height and width (models/convert/open-input-size.ts), so
  // the image is fitted into inputSize and padded only to a multiple of the largest stride, not to the square.
  // The OpenCV file stays square: ignored on that runtime.
  bool openInputSize = false;
  float iouThreshold = 0;  // NMS drops a box overlapping a better one of its class by more than this
};

class YoloDetector : public ObjectDetector {
 public:
  // Loads the model and runs one warm-up pass that checks the output shapes (and, for kDecoded, tells
  // pixel boxes from 0..1 ones). Throws std::runtime_error.
  YoloDetector(const YoloDetectorSpec& spec, const RuntimeOptions& runtime);

  std::vector<DetectedObject> Detect(const cv::Mat& bgr, const ObjectOptions& options, StageTimings* timings) override;
  int InputSide() const override { return spec_.inputSize; }
  // With an open input size: every multiple of 32 on the short side.
  void WarmShapes() override;

 private:
  std::vector<DetectedObject> Postprocess(const std::vector<cv::Mat>& outputs, const Letterbox& box,
                                          const ObjectOptions& options) const;
  void CheckOutputs(const std::vector<cv::Mat>& outputs, const std::string& what) const;

  YoloDetectorSpec spec_;
  std::unique_ptr<InferenceModel> model_;
  float boxUnit_ = 1;  // kDecoded: input pixels per output box unit (inputSize for 0..1 boxes, else 1)
  int roundTo_ = 0;    // LetterboxSource::roundTo: the largest stride with an open input size, else 0 (square)
};

}  // namespace edgecv
