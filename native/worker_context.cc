#include "worker_context.h"

#include "error_code.h"

namespace edgecv {

cv::dnn::Net& WorkerContext::RawNet(const std::string& path) {
  auto found = rawNets_.find(path);
  if (found != rawNets_.end()) return found->second;
  cv::dnn::Net net;
  try {
    net = cv::dnn::readNetFromONNX(path);
  } catch (const cv::Exception& e) {
    throw JobError(ErrorCode::kInternal, "cannot load model " + path + ": " + e.what());
  }
  if (net.empty()) throw JobError(ErrorCode::kInternal, "cannot load model " + path + ": empty network");
  net.setPreferableBackend(backend.dnnBackend);
  net.setPreferableTarget(backend.dnnTarget);
  return rawNets_.emplace(path, std::move(net)).first->second;
}

}  // namespace edgecv
