#include "run_model_job.h"

#include <cstring>

#include "worker_context.h"

namespace edgecv {

RunModelJob::RunModelJob(Napi::Env env, Napi::Float32Array input, RawModelSpec spec)
    : Job(env), data_(input.Data()), length_(input.ElementLength()), spec_(std::move(spec)) {
  Pin(input);
}

void RunModelJob::Execute(WorkerContext& ctx) {
  size_t expected = 1;
  for (int d : spec_.inputShape) expected *= static_cast<size_t>(d);
  if (expected != length_) {
    throw JobError(ErrorCode::kInvalidArgument, "input has " + std::to_string(length_) + " values, shape needs " +
                                                    std::to_string(expected));
  }
  cv::dnn::Net& net = ctx.RawNet(spec_.path);
  // Copy into an owned blob: OpenCV may keep the input Mat past this job.
  cv::Mat blob(static_cast<int>(spec_.inputShape.size()), spec_.inputShape.data(), CV_32F);
  std::memcpy(blob.ptr<float>(), data_, length_ * sizeof(float));
  net.setInput(blob);
  std::vector<cv::Mat> outs;
  net.forward(outs, spec_.outputs);
  // forward() returns views of the net's own buffers, reused by the next call.
  outputs_.reserve(outs.size());
  for (const cv::Mat& out : outs) {
    cv::Mat owned;
    out.convertTo(owned, CV_32F);
    outputs_.push_back(owned.isContinuous() ? owned : owned.clone());
  }
}

Napi::Value RunModelJob::Result(Napi::Env env) {
  Napi::Array result = Napi::Array::New(env, outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const cv::Mat& out = outputs_[i];
    Napi::Float32Array array = Napi::Float32Array::New(env, out.total());
    if (out.total() > 0) std::memcpy(array.Data(), out.ptr<float>(), out.total() * sizeof(float));
    result.Set(static_cast<uint32_t>(i), array);
  }
  return result;
}

}  // namespace edgecv
