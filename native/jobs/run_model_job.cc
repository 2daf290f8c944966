#include "jobs/run_model_job.h"

#include <cstring>
#include <memory>

#include "pool/worker_context.h"

namespace edgecv {

RunModelJob::RunModelJob(Napi::Env env, Napi::Float32Array input, RawModelSpec spec)
    : Job(env), data_(input.Data()), length_(input.ElementLength()), spec_(std::move(spec)) {
  Pin(input);
}

void RunModelJob::Execute(WorkerContext& ctx) {
  // Checked: a huge shape must not wrap around to match the input's length.
  size_t expected = 1;
  bool overflow = false;
  for (int d : spec_.inputShape)
    overflow = overflow || __builtin_mul_overflow(expected, static_cast<size_t>(d), &expected);
  if (overflow || expected != length_) {
    const std::string needs = overflow ? "more than memory holds" : std::to_string(expected);
    throw JobError(ErrorCode::kInvalidArgument,
                   "input has " + std::to_string(length_) + " values, shape needs " + needs);
  }
  InferenceModel& model = ctx.RawModel(spec_.model, spec_.outputs);
  const int dims = static_cast<int>(spec_.inputShape.size());
  if (!model.SharesBuffers()) {
    // The pinned input is read in place, and the outputs are ours to hand to JS without a copy.
    outputs_ = model.Run(cv::Mat(dims, spec_.inputShape.data(), CV_32F, const_cast<float*>(data_)));
    return;
  }
  // Copy into an owned blob: the runtime may keep the input Mat past this job...
  cv::Mat blob(dims, spec_.inputShape.data(), CV_32F);
  std::memcpy(blob.ptr<float>(), data_, length_ * sizeof(float));
  const std::vector<cv::Mat> outs = model.Run(blob);
  // ...and the outputs are views of its own buffers, reused by the next call.
  outputs_.reserve(outs.size());
  for (const cv::Mat& out : outs) outputs_.push_back(out.clone());
}

Napi::Value RunModelJob::Result(Napi::Env env) {
  Napi::Array result = Napi::Array::New(env, outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    // The Float32Array views the Mat's memory; the Mat (a refcount, moved to the heap) lives until JS drops it.
    auto owner = std::make_unique<cv::Mat>(outputs_[i]);
    float* data = owner->ptr<float>();
    const size_t count = owner->total();
    const int64_t bytes = static_cast<int64_t>(count * sizeof(float));
    Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(
        env, data, static_cast<size_t>(bytes),
        [](Napi::Env env, void*, cv::Mat* mat) {
          Napi::MemoryManagement::AdjustExternalMemory(env, -static_cast<int64_t>(mat->total() * sizeof(float)));
          std::unique_ptr<cv::Mat>{mat};
        },
        owner.get());
    owner.release();  // owned by the buffer's finalizer from here on
    // Told to the garbage collector as external memory, so it collects outputs a loop drops sooner and their
    // buffers come back to the recycler (runtime/recycled_buffers.h): fewer page faults a run (docs/performance.md,
    // "Engine speed").
    Napi::MemoryManagement::AdjustExternalMemory(env, bytes);
    result.Set(static_cast<uint32_t>(i), Napi::Float32Array::New(env, count, buffer, 0));
  }
  return result;
}

}  // namespace edgecv
