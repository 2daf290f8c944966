#include "dnn_model.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace edgecv {
namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::ostringstream out;
  for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << '"' << names[i] << '"';
  return out.str();
}

}  // namespace

cv::dnn::Net LoadDnnModel(const std::string& path, const std::vector<std::string>& outputs, const BackendInfo& backend,
                          const std::string& what) {
  if (!std::ifstream(path).good()) throw std::runtime_error(what + "file not found or unreadable");
  cv::dnn::Net net;
  try {
    net = cv::dnn::readNetFromONNX(path);
  } catch (const cv::Exception& e) {
    throw std::runtime_error(what + "OpenCV could not load it: " + e.what());
  }
  if (net.empty()) throw std::runtime_error(what + "OpenCV loaded an empty network");
  net.setPreferableBackend(backend.dnnBackend);
  net.setPreferableTarget(backend.dnnTarget);
  for (const std::string& name : outputs) {
    if (net.getLayerId(name) < 0) {
      throw std::runtime_error(what + "output \"" + name + "\" is not a layer of the network (unconnected outputs: " +
                               JoinNames(net.getUnconnectedOutLayersNames()) + ")");
    }
  }
  return net;
}

std::vector<cv::Mat> WarmUp(cv::dnn::Net& net, int inputSize, const std::vector<std::string>& outputs,
                            const std::string& what) {
  std::vector<cv::Mat> result;
  try {
    const int shape[] = {1, 3, inputSize, inputSize};
    net.setInput(cv::Mat(4, shape, CV_32F, cv::Scalar(0)));
    net.forward(result, outputs);
  } catch (const cv::Exception& e) {
    throw std::runtime_error(what + "warm-up inference failed: " + e.what());
  }
  return result;
}

std::string ShapeString(const cv::Mat& m) {
  std::ostringstream out;
  out << '[';
  for (int i = 0; i < m.dims; ++i) out << (i ? "," : "") << m.size[i];
  out << ']';
  return out.str();
}

bool IsNhwc(const cv::Mat& m, int h, int w, int channels) {
  return m.type() == CV_32F && m.isContinuous() && m.dims == 4 && m.size[0] == 1 && m.size[1] == h &&
         m.size[2] == w && m.size[3] == channels;
}

}  // namespace edgecv
