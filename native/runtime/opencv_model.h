// InferenceModel on OpenCV's DNN module (CPU, or its CUDA backend when the engine's backend is CUDA).
#pragma once

#include <set>
#include <string>
#include <vector>

#include <opencv2/dnn.hpp>

#include "runtime/inference_model.h"

namespace edgecv {

class OpenCvModel : public InferenceModel {
 public:
  // Throws std::runtime_error starting with `what`.
  OpenCvModel(const std::string& path, const std::vector<std::string>& outputs, const RuntimeOptions& options,
              const std::string& what);

  std::vector<cv::Mat> Run(const cv::Mat& input) override;
  bool SharesBuffers() const override { return true; }  // setInput() keeps the Mat; forward() reuses its blobs
  const std::vector<std::string>& outputNames() const override { return outputs_; }
  // One run per shape: the net allocates its layers' blobs on the first forward at a shape. Its runs are not
  // counted as cold (OpenCV DNN is the fallback runtime; runtime/shape_runs.h counts onnxruntime's).
  void WarmShape(const std::vector<int>& shape) override;

 private:
  cv::dnn::Net net_;
  std::vector<std::string> outputs_;
  std::set<std::vector<int>> warmShapes_;
};

}  // namespace edgecv
