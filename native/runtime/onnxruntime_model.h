// InferenceModel on onnxruntime (CPU execution provider, or CUDA when the engine's backend is CUDA and the
// loaded library has that provider, or the WebGPU provider for a GPU net: runtime/gpu_sessions.h). One session per
// worker, its intra-op threads = the worker's threads, so with one thread a run executes on the worker thread itself
// and workers scale without sharing a pool. On the CPU an int8 graph with SiLUs runs with edgecv's own operators in it
// (ops/int8_graph_fusion.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/inference_model.h"

namespace Ort {
struct Session;
}

namespace edgecv {

class OnnxRuntimeModel : public InferenceModel {
 public:
  // Needs LoadOnnxRuntime() to have succeeded. Throws std::runtime_error starting with `what`.
  OnnxRuntimeModel(const ModelSource& source, const std::vector<std::string>& outputs, const RuntimeOptions& options,
                   const std::string& what);
  ~OnnxRuntimeModel() override;

  std::vector<cv::Mat> Run(const cv::Mat& input) override;
  bool SharesBuffers() const override { return false; }
  const std::vector<std::string>& outputNames() const override;
  void WarmShape(const std::vector<int>& shape) override;
  std::vector<cv::Mat> CheckRun(const cv::Mat& input) override;

 private:
  // One run on `session`: the worker's own, the engine's wide one, or its GPU one.
  std::vector<cv::Mat> RunSession(Ort::Session& session, const cv::Mat& input);

  struct Session;  // keeps the onnxruntime types out of this header
  std::unique_ptr<Session> session_;
};

}  // namespace edgecv
