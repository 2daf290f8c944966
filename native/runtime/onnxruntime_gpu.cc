#include "runtime/onnxruntime_gpu.h"

#if EDGECV_WITH_ONNXRUNTIME
#include <unordered_map>

#include "runtime/onnxruntime_library.h"

namespace edgecv {

std::mutex& GpuQueue() {
  static std::mutex queue;
  return queue;
}

GpuSession::~GpuSession() {
  const std::lock_guard<std::mutex> lock(GpuQueue());
  session = Ort::Session{nullptr};
}

bool GpuSession::Takes(const std::vector<int64_t>& shape) const {
  if (shape.size() != inputDims.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (inputDims[i] > 0 && inputDims[i] != shape[i]) return false;
  }
  return true;
}

std::shared_ptr<GpuSession> MakeGpuSession(const std::string& path, bool openInput, bool fusions) {
  const std::lock_guard<std::mutex> lock(GpuQueue());
  Ort::SessionOptions so;
  if (openInput) so.DisableMemPattern();
  so.SetIntraOpNumThreads(1);
  so.SetInterOpNumThreads(1);
  so.SetExecutionMode(ORT_SEQUENTIAL);
  so.SetGraphOptimizationLevel(fusions ? GraphOptimizationLevel::ORT_ENABLE_ALL
                                       : GraphOptimizationLevel::ORT_ENABLE_BASIC);
  so.AppendExecutionProvider("WebGPU", std::unordered_map<std::string, std::string>{});
  auto gpu = std::make_shared<GpuSession>(Ort::Session(OnnxRuntimeEnv(), path.c_str(), so), openInput ? 1 : 2);
  gpu->inputDims = gpu->session.GetInputTypeInfo(0).GetTensorTypeAndShapeInfo().GetShape();
  return gpu;
}

}  // namespace edgecv
#endif
