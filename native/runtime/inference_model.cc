#include "runtime/inference_model.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "runtime/onnxruntime_model.h"
#include "runtime/opencv_model.h"

namespace edgecv {

std::unique_ptr<InferenceModel> LoadInferenceModel(const ModelSource& source, const std::vector<std::string>& outputs,
                                                   const RuntimeOptions& options, const std::string& what) {
  if (!std::ifstream(source.path).good()) throw std::runtime_error(what + "file not found or unreadable");
  if (source.runtime == RuntimeKind::kOnnxRuntime) {
    return std::make_unique<OnnxRuntimeModel>(source, outputs, options, what);
  }
  return std::make_unique<OpenCvModel>(source.path, outputs, options, what);
}

std::vector<cv::Mat> WarmUp(InferenceModel& model, int inputSize, const std::string& what) {
  try {
    const std::vector<int> shape = {1, 3, inputSize, inputSize};
    model.WarmShape(shape);
    return model.CheckRun(cv::Mat(4, shape.data(), CV_32F, cv::Scalar(0)));
  } catch (const std::exception& e) {  // cv::Exception and Ort::Exception included
    throw std::runtime_error(what + "warm-up inference failed: " + e.what());
  }
}

std::string ShapeString(const cv::Mat& m) {
  std::ostringstream out;
  out << '[';
  for (int i = 0; i < m.dims; ++i) out << (i ? "," : "") << m.size[i];
  out << ']';
  return out.str();
}

std::string QuotedNames(const std::vector<std::string>& names) {
  std::ostringstream out;
  for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << '"' << names[i] << '"';
  return out.str();
}

bool IsNhwc(const cv::Mat& m, int h, int w, int channels) {
  return m.type() == CV_32F && m.isContinuous() && m.dims == 4 && m.size[0] == 1 && m.size[1] == h && m.size[2] == w &&
         m.size[3] == channels;
}

}  // namespace edgecv
