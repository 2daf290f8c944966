#include "runtime/backend.h"

#include "runtime/onnxruntime_library.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <opencv2/dnn.hpp>

// EDGECV_WITH_CUDA comes from CMake. cv::cuda's device queries live in
// opencv_core and exist (returning 0 devices) even in CPU-only builds, so this
// compiles and runs cleanly without CUDA; the header check guards odd installs.
#if EDGECV_WITH_CUDA && __has_include(<opencv2/core/cuda.hpp>)
#include <opencv2/core/cuda.hpp>
#define EDGECV_CUDA_PROBE 1
#else
#define EDGECV_CUDA_PROBE 0
#endif

namespace edgecv {
namespace {

bool ProbeOpenCvCuda(std::string* deviceName, int* device) {
#if EDGECV_CUDA_PROBE
  try {
    // DNN must have been compiled with the CUDA backend...
    const auto targets = cv::dnn::getAvailableTargets(cv::dnn::DNN_BACKEND_CUDA);
    if (std::find(targets.begin(), targets.end(), cv::dnn::DNN_TARGET_CUDA) == targets.end()) {
      return false;
    }
    // ...and the driver must see a device now (returns 0 or -1 otherwise).
    if (cv::cuda::getCudaEnabledDeviceCount() <= 0) return false;
    *device = cv::cuda::getDevice();
    cv::cuda::DeviceInfo info(*device);
    *deviceName = info.name();
    return true;
  } catch (const std::exception&) {
    return false;
  }
#else
  (void)deviceName;
  (void)device;
  return false;
#endif
}

std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto start = line.find_first_not_of(" \t", colon + 1);
        if (start != std::string::npos) return line.substr(start);
      }
    }
  }
  return "cpu (" + std::to_string(std::thread::hardware_concurrency()) + " threads)";
}

BackendInfo CpuBackend() {
  BackendInfo info;
  info.kind = BackendKind::kCpu;
  info.device = CpuModelName();
  info.dnnBackend = cv::dnn::DNN_BACKEND_OPENCV;
  info.dnnTarget = cv::dnn::DNN_TARGET_CPU;
  return info;
}

}  // namespace

// The Vulkan adapter and whether onnxruntime's WebGPU provider can use it.
void FindWebGpu(const OnnxRuntimeInfo* onnxRuntime, BackendInfo* info) {
  info->gpu = FindGpuAdapter();
  if (onnxRuntime == nullptr) {
    info->webGpuMissing = "onnxruntime is not loaded";
  } else if (!onnxRuntime->webGpu) {
    info->webGpuMissing =
        "onnxruntime " + onnxRuntime->version + " at " + onnxRuntime->path +
        " has no WebGPU execution provider (onnxruntime-node's linux x64 build has it, arm64's does not)";
  } else if (!info->gpu.found) {
    info->webGpuMissing = info->gpu.why;
  }
  info->webGpu = info->webGpuMissing.empty();
}

BackendInfo SelectBackend(const std::string& wanted, const OnnxRuntimeInfo* onnxRuntime) {
  if (wanted == "cpu") return CpuBackend();
  if (wanted != "auto" && wanted != "cuda" && wanted != "gpu") {
    throw std::runtime_error("backend must be one of auto, cpu, cuda, gpu (got \"" + wanted + "\")");
  }
  BackendInfo info = CpuBackend();
  if (wanted == "gpu" || wanted == "auto") FindWebGpu(onnxRuntime, &info);
  if (wanted == "gpu") {
    if (!info.webGpu) throw std::runtime_error("backend gpu was asked for, but " + info.webGpuMissing);
    return info;
  }
  std::string deviceName;
  info.opencvCuda = ProbeOpenCvCuda(&deviceName, &info.cudaDevice);
  info.onnxRuntimeCuda = onnxRuntime != nullptr && onnxRuntime->cuda;
  if (info.opencvCuda || info.onnxRuntimeCuda) {
    info.kind = BackendKind::kCuda;
    info.device = info.opencvCuda ? deviceName : "CUDA device " + std::to_string(info.cudaDevice) + " (onnxruntime)";
    if (info.opencvCuda) {
      info.dnnBackend = cv::dnn::DNN_BACKEND_CUDA;
      info.dnnTarget = cv::dnn::DNN_TARGET_CUDA;
    }
    return info;
  }
  if (wanted == "cuda") {
    throw std::runtime_error(
        "backend cuda was asked for, but neither OpenCV's DNN module nor the onnxruntime library has a usable CUDA "
        "device");
  }
  return info;
}

}  // namespace edgecv
