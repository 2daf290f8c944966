// Loading an ONNX file into a cv::dnn::Net and checking its outputs: the part every model class shares.
#pragma once

#include <string>
#include <vector>

#include <opencv2/dnn.hpp>

#include "backend.h"

namespace edgecv {

// Loads `path` on `backend` and checks that every name in `outputs` is a layer of it. Throws
// std::runtime_error with a message that starts with `what` (e.g. "pose model x.onnx: ").
cv::dnn::Net LoadDnnModel(const std::string& path, const std::vector<std::string>& outputs, const BackendInfo& backend,
                          const std::string& what);

// One forward pass of a zero image [1,3,S,S]: allocates the buffers now rather than on the first
// request, and returns the outputs so the caller can check the shapes its decoder relies on.
std::vector<cv::Mat> WarmUp(cv::dnn::Net& net, int inputSize, const std::vector<std::string>& outputs,
                            const std::string& what);

// "[1,64,64,17]"
std::string ShapeString(const cv::Mat& m);

// True when `m` is a dense float32 NHWC tensor [1, h, w, channels].
bool IsNhwc(const cv::Mat& m, int h, int w, int channels);

}  // namespace edgecv
