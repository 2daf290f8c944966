// runModel(): one raw forward pass of any ONNX model on a caller-made NCHW
// tensor, returning the named outputs as float32 arrays. Used to check converted
// models against their originals (parity tests) and to time the runtimes (bench),
// through the very same InferenceModel code path the detectors use.
#pragma once

#include <napi.h>

#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "pool/job.h"
#include "runtime/inference_model.h"

namespace edgecv {

struct RawModelSpec {
  ModelSource model;
  std::vector<int> inputShape;       // e.g. {1, 3, 256, 256}
  std::vector<std::string> outputs;  // output layer names, result order
};

class RunModelJob : public Job {
 public:
  // JS thread. `input` is pinned, not copied, until the worker copies it into a blob.
  RunModelJob(Napi::Env env, Napi::Float32Array input, RawModelSpec spec);

  void Execute(WorkerContext& ctx) override;
  Napi::Value Result(Napi::Env env) override;

 private:
  const float* data_;
  size_t length_;
  RawModelSpec spec_;
  std::vector<cv::Mat> outputs_;
};

}  // namespace edgecv
