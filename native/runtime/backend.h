// Chooses the device once per engine. CUDA is used only when a runtime can drive it (OpenCV's DNN module
// built with CUDA and a device visible, or an onnxruntime library with its CUDA execution provider) and the user did
// not force the CPU. The GPU through Vulkan (onnxruntime's WebGPU provider) is chosen per net by the host
// (src/engine/gpu-check.ts), from what this finds.
#pragma once

#include <string>

#include "runtime/gpu_adapter.h"

namespace edgecv {

enum class BackendKind { kCpu, kCuda };

struct BackendInfo {
  BackendKind kind = BackendKind::kCpu;
  std::string device;            // CPU model name or CUDA device name
  int dnnBackend = 0;            // cv::dnn::Backend for models on OpenCV (CUDA only when OpenCV has it)
  int dnnTarget = 0;             // cv::dnn::Target
  bool opencvCuda = false;       // OpenCV's DNN runs on the CUDA device
  bool onnxRuntimeCuda = false;  // onnxruntime's CUDA execution provider runs on it
  int cudaDevice = 0;
  // Asked for with "gpu" or "auto": the Vulkan adapter, and whether onnxruntime's WebGPU provider can run nets on
  // it. Which nets do is each model's own choice (ModelSource::gpu), made by the host.
  GpuAdapter gpu;
  bool webGpu = false;
  std::string webGpuMissing;  // why not, when webGpu is false
};

inline const char* BackendName(BackendKind kind) { return kind == BackendKind::kCuda ? "cuda" : "cpu"; }

struct OnnxRuntimeInfo;

// `wanted`: "auto" = CUDA when usable else CPU, "cpu" = force CPU (Vulkan untouched), "cuda" = require
// CUDA (throws std::runtime_error if it is not usable), "gpu" = the CPU for every net the host does not put on the
// GPU, and the WebGPU provider must be usable (throws otherwise). "auto" and "gpu" look for a Vulkan adapter.
// Throws std::runtime_error on any other value. `onnxRuntime` is the loaded onnxruntime library, or null.
BackendInfo SelectBackend(const std::string& wanted, const OnnxRuntimeInfo* onnxRuntime);

}  // namespace edgecv
