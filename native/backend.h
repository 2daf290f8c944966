// Chooses the OpenCV DNN backend once per engine. This is the single source of
// truth for "gpu_support": the CUDA backend is used only when OpenCV's DNN module
// was built with CUDA *and* a CUDA device is visible at run time.
#pragma once

#include <string>

namespace edgecv {

enum class BackendKind { kCpu, kCuda };

struct BackendInfo {
  BackendKind kind = BackendKind::kCpu;
  std::string device;  // CPU model name or CUDA device name
  int dnnBackend = 0;  // cv::dnn::Backend
  int dnnTarget = 0;   // cv::dnn::Target
};

inline const char* BackendName(BackendKind kind) {
  return kind == BackendKind::kCuda ? "cuda" : "cpu";
}

// Reads EDGECV_BACKEND: unset/"auto" = CUDA when usable else CPU, "cpu" = force
// CPU, "cuda" = require CUDA (throws std::runtime_error if it is not usable).
// Throws std::runtime_error on any other value.
BackendInfo SelectBackend();

}  // namespace edgecv
