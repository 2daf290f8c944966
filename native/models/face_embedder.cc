#include "models/face_embedder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

#include "runtime/inference_model.h"
#include "runtime/error_code.h"
#include "runtime/job.h"  // Clock, MillisBetween

namespace edgecv {

FaceEmbedder::FaceEmbedder(const FaceEmbedderSpec& spec, const RuntimeOptions& runtime) : spec_(spec) {
  const std::string what = "face embedding model " + spec_.model.path + ": ";
  if (spec_.inputSize <= 0) throw std::runtime_error(what + "inputSize must be positive");
  if (spec_.output.empty()) throw std::runtime_error(what + "output name is empty");
  if (!(spec_.cropScale > 0)) throw std::runtime_error(what + "cropScale must be positive");
  model_ = LoadInferenceModel(spec_.model, {spec_.output}, runtime, what);
  const cv::Mat out = WarmUp(*model_, spec_.inputSize, what)[0];
  if (out.type() != CV_32F || out.total() == 0) {
    throw std::runtime_error(what + "output \"" + spec_.output + "\" is not a float32 tensor");
  }
  dim_ = static_cast<int>(out.total());
}

cv::Rect FaceEmbedder::SquareAround(const PixelRect& face, double cropScale) {
  const double cx = (face[0] + face[2]) / 2.0;
  const double cy = (face[1] + face[3]) / 2.0;
  const double side = std::max(1.0, std::max(face[2] - face[0], face[3] - face[1]) * cropScale);
  const int s = static_cast<int>(std::lround(side));
  return {static_cast<int>(std::lround(cx - side / 2)), static_cast<int>(std::lround(cy - side / 2)), s, s};
}

cv::Mat FaceEmbedder::CutPadded(const cv::Mat& bgr, const cv::Rect& region) {
  const cv::Rect inside = region & cv::Rect(0, 0, bgr.cols, bgr.rows);
  const int side = std::max(region.width, region.height);
  if (side > kMaxCutSide) {
    // Shrink only the part inside the image, into a black canvas of the shrunk region.
    const double f = static_cast<double>(kMaxCutSide) / side;
    const auto scaled = [f](int v) { return static_cast<int>(std::lround(v * f)); };
    cv::Mat out(std::max(1, scaled(region.height)), std::max(1, scaled(region.width)), bgr.type(), cv::Scalar::all(0));
    const cv::Rect to = cv::Rect(scaled(inside.x - region.x), scaled(inside.y - region.y), std::max(1, scaled(inside.width)),
                                 std::max(1, scaled(inside.height))) &
                        cv::Rect(0, 0, out.cols, out.rows);
    if (inside.area() > 0 && to.area() > 0) {
      cv::Mat target = out(to);
      cv::resize(bgr(inside), target, to.size(), 0, 0, cv::INTER_AREA);
    }
    return out;
  }
  if (inside == region) return bgr(region);  // a view: no copy when nothing needs padding
  cv::Mat out(region.size(), bgr.type(), cv::Scalar::all(0));
  if (inside.area() > 0) bgr(inside).copyTo(out(inside - region.tl()));
  return out;
}

std::vector<float> FaceEmbedder::Embed(const cv::Mat& bgr, const PixelRect& face, double cropScale,
                                       double* preprocessMs, double* inferenceMs) {
  const auto t0 = Clock::now();
  const cv::Mat blob = Preprocess(bgr, face, cropScale > 0 ? cropScale : spec_.cropScale);
  const auto t1 = Clock::now();
  const cv::Mat out = Infer(blob);
  const auto t2 = Clock::now();
  if (preprocessMs) *preprocessMs += MillisBetween(t0, t1);
  if (inferenceMs) *inferenceMs += MillisBetween(t1, t2);
  return Postprocess(out);
}

cv::Mat FaceEmbedder::Preprocess(const cv::Mat& bgr, const PixelRect& face, double cropScale) const {
  const cv::Mat square = CutPadded(bgr, SquareAround(face, cropScale));
  const int size = spec_.inputSize;
  cv::Mat resized;
  // INTER_AREA when shrinking: plain bilinear would alias a large face.
  const int interpolation = square.cols > size ? cv::INTER_AREA : cv::INTER_LINEAR;
  cv::resize(square, resized, cv::Size(size, size), 0, 0, interpolation);
  cv::Mat blob;
  cv::dnn::blobFromImage(resized, blob, spec_.scale, cv::Size(), cv::Scalar::all(spec_.meanValue), spec_.swapRB,
                         false, CV_32F);
  return blob;
}

cv::Mat FaceEmbedder::Infer(const cv::Mat& blob) {
  return model_->Run(blob)[0];
}

std::vector<float> FaceEmbedder::Postprocess(const cv::Mat& output) const {
  if (static_cast<int>(output.total()) != dim_ || output.type() != CV_32F) {
    throw JobError(ErrorCode::kInternal, "embedding output changed shape");
  }
  const cv::Mat flat = output.isContinuous() ? output.reshape(1, 1) : output.clone().reshape(1, 1);
  std::vector<float> embedding(flat.ptr<float>(), flat.ptr<float>() + dim_);
  double sum = 0;
  for (float v : embedding) sum += static_cast<double>(v) * v;
  const double norm = std::sqrt(sum);
  if (!std::isfinite(norm) || norm <= 0) throw JobError(ErrorCode::kInternal, "embedding has no direction (zero norm)");
  for (float& v : embedding) v = static_cast<float>(v / norm);
  return embedding;
}

}  // namespace edgecv
