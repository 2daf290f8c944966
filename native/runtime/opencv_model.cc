#include "runtime/opencv_model.h"

#include <stdexcept>

namespace edgecv {
OpenCvModel::OpenCvModel(const std::string& path, const std::vector<std::string>& outputs,
                         const RuntimeOptions& options, const std::string& what)
    : outputs_(outputs) {
  try {
    net_ = cv::dnn::readNetFromONNX(path);
  } catch (const cv::Exception& e) {
    throw std::runtime_error(what + "OpenCV could not load it: " + e.what());
  }
  if (net_.empty()) throw std::runtime_error(what + "OpenCV loaded an empty network");
  net_.setPreferableBackend(options.backend.dnnBackend);
  net_.setPreferableTarget(options.backend.dnnTarget);
  if (outputs_.empty()) outputs_ = net_.getUnconnectedOutLayersNames();
  for (const std::string& name : outputs_) {
    if (net_.getLayerId(name) < 0) {
      throw std::runtime_error(what + "output \"" + name + "\" is not a layer of the network (unconnected outputs: " +
                               QuotedNames(net_.getUnconnectedOutLayersNames()) + ")");
    }
  }
}

std::vector<cv::Mat> OpenCvModel::Run(const cv::Mat& input) {
  net_.setInput(input);
  std::vector<cv::Mat> results;
  net_.forward(results, outputs_);  // views of the net's own buffers, reused by the next forward()
  return results;
}

void OpenCvModel::WarmShape(const std::vector<int>& shape) {
  if (!warmShapes_.insert(shape).second) return;
  Run(cv::Mat(static_cast<int>(shape.size()), shape.data(), CV_32F, cv::Scalar(0)));
}

}  // namespace edgecv
