// CenterNet object detector (preprocess -> infer -> postprocess). The converted graph is cut
// before the model's TopK; Postprocess() reproduces its decoding: class heatmap peaks (3x3 max-pool NMS),
// best first, each with a box given as distances from its cell to the four box sides.
//
// Not thread-safe (owns an InferenceModel): one instance per worker thread.
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

struct CenterNetDetectorSpec : ImageModelSpec {  // the heads are S/4 x S/4
  std::string heatmapOutput;                     // [1,S/4,S/4,classes], already sigmoid
  std::string boxOutput;                         // [1,S/4,S/4,4]: left, top, right, bottom distances in input pixels
  int classes = 0;
};

class CenterNetDetector : public ObjectDetector {
 public:
  // Loads the model and runs one warm-up pass that checks the output shapes. Throws std::runtime_error.
  CenterNetDetector(const CenterNetDetectorSpec& spec, const RuntimeOptions& runtime);

  std::vector<DetectedObject> Detect(const cv::Mat& bgr, const ObjectOptions& options, StageTimings* timings) override;
  int InputSide() const override { return spec_.inputSize; }

 private:
  std::vector<DetectedObject> Postprocess(const std::vector<cv::Mat>& outputs, const Letterbox& box,
                                          const ObjectOptions& options) const;

  CenterNetDetectorSpec spec_;
  std::unique_ptr<InferenceModel> model_;
  int grid_ = 0;  // S / 4
};

}  // namespace edgecv
