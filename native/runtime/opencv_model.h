// InferenceModel on OpenCV's DNN module (CPU, or its CUDA backend when the engine's backend is CUDA).
#pragma once

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

 private:
  cv::dnn::Net net_;
  std::vector<std::string> outputs_;
};

}  // namespace edgecv
