#include "backend.h"

#include <algorithm>
#include <cstdlib>
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

bool ProbeCuda(std::string* deviceName) {
#if EDGECV_CUDA_PROBE
  try {
    // DNN must have been compiled with the CUDA backend...
    const auto targets = cv::dnn::getAvailableTargets(cv::dnn::DNN_BACKEND_CUDA);
    if (std::find(targets.begin(), targets.end(), cv::dnn::DNN_TARGET_CUDA) == targets.end()) {
      return false;
    }
    // ...and the driver must see a device now (returns 0 or -1 otherwise).
    if (cv::cuda::getCudaEnabledDeviceCount() <= 0) return false;
    cv::cuda::DeviceInfo info(cv::cuda::getDevice());
    *deviceName = info.name();
    return true;
  } catch (const std::exception&) {
    return false;
  }
#else
  (void)deviceName;
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

BackendInfo SelectBackend() {
  const char* env = std::getenv("EDGECV_BACKEND");
  const std::string wanted = env ? env : "auto";
  if (wanted == "cpu") return CpuBackend();
  if (wanted != "auto" && wanted != "" && wanted != "cuda") {
    throw std::runtime_error("EDGECV_BACKEND must be one of auto, cpu, cuda (got \"" + wanted + "\")");
  }
  std::string deviceName;
  if (ProbeCuda(&deviceName)) {
    BackendInfo info;
    info.kind = BackendKind::kCuda;
    info.device = deviceName;
    info.dnnBackend = cv::dnn::DNN_BACKEND_CUDA;
    info.dnnTarget = cv::dnn::DNN_TARGET_CUDA;
    return info;
  }
  if (wanted == "cuda") {
    throw std::runtime_error(
        "EDGECV_BACKEND=cuda, but OpenCV's DNN module has no CUDA backend or no CUDA device is visible");
  }
  return CpuBackend();
}

}  // namespace edgecv
