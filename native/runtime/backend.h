// Chooses the device once per engine. This is the single source of truth for
// "gpu_support": CUDA is used only when a runtime can drive it (OpenCV's DNN module
// built with CUDA and a device visible, or an onnxruntime library with its CUDA
// execution provider) and the user did not force the CPU.
#pragma once

#include <string>

namespace edgecv {

enum class BackendKind { kCpu, kCuda };

struct BackendInfo {
  BackendKind kind = BackendKind::kCpu;
  std::string device;  // CPU model name or CUDA device name
  int dnnBackend = 0;  // cv::dnn::Backend for models on OpenCV (CUDA only when OpenCV has it)
  int dnnTarget = 0;   // cv::dnn::Target
  bool opencvCuda = false;       // OpenCV's DNN runs on the CUDA device
  bool onnxRuntimeCuda = false;  // onnxruntime's CUDA execution provider runs on it
  int cudaDevice = 0;
};

inline const char* BackendName(BackendKind kind) {
  return kind == BackendKind::kCuda ? "cuda" : "cpu";
}

struct OnnxRuntimeInfo;

// `wanted`: "auto" = CUDA when usable else CPU, "cpu" = force CPU, "cuda" = require
// CUDA (throws std::runtime_error if it is not usable). Throws std::runtime_error on
// any other value. `onnxRuntime` is the loaded onnxruntime library, or null.
BackendInfo SelectBackend(const std::string& wanted, const OnnxRuntimeInfo* onnxRuntime);

}  // namespace edgecv
