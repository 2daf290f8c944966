#include "pool/worker_context.h"

#include <stdexcept>

#include "runtime/error_code.h"

namespace edgecv {

InferenceModel& WorkerContext::RawModel(const ModelSource& source, const std::vector<std::string>& outputs) {
  std::string key = std::string(RuntimeName(source.runtime)) +
                    (source.gpu ? (source.gpuFusions ? " gpu" : " gpu basic") : "") + '\n' + source.path;
  for (const std::string& name : outputs) key += '\n' + name;
  auto found = rawModels_.find(key);
  if (found != rawModels_.end()) return *found->second;
  std::unique_ptr<InferenceModel> model;
  try {
    model = LoadInferenceModel(source, outputs, runtime, "cannot load model " + source.path + ": ");
  } catch (const std::runtime_error& e) {
    throw JobError(ErrorCode::kInternal, e.what());
  }
  return *rawModels_.emplace(key, std::move(model)).first->second;
}

}  // namespace edgecv
