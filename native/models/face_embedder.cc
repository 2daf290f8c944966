#include "models/face_embedder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

#include "image/area_resize.h"
#include "runtime/error_code.h"
#include "runtime/recycled_buffers.h"
#include "runtime/inference_model.h"

namespace edgecv {

FaceEmbedder::FaceEmbedder(const FaceEmbedderSpec& spec, const RuntimeOptions& runtime) : spec_(spec) {
  const std::string what = "face embedding model " + spec_.model.path + ": ";
  if (spec_.inputSize <= 0) throw std::runtime_error(what + "inputSize must be positive");
  if (spec_.output.empty()) throw std::runtime_error(what + "output name is empty");
  model_ = LoadInferenceModel(spec_.model, {spec_.output}, runtime, what);
  const cv::Mat out = WarmUp(*model_, spec_.inputSize, what)[0];
  if (out.type() != CV_32F || out.total() == 0) {
    throw std::runtime_error(what + "output \"" + spec_.output + "\" is not a float32 tensor");
  }
  dim_ = static_cast<int>(out.total());
}

std::vector<float> FaceEmbedder::Embed(const cv::Mat& bgr, const PixelRect& face, const FaceKeypoints* keypoints,
                                       double cropScale, StageTimings* timings) {
  return RunStaged(
      *model_, timings, [&] { return Preprocess(bgr, face, keypoints, cropScale); },
      [&](const std::vector<cv::Mat>& outputs) { return Postprocess(outputs[0]); });
}

cv::Rect FaceEmbedder::Reads(const PixelRect& face, const FaceKeypoints* keypoints, double cropScale) const {
  const int size = spec_.inputSize;
  const std::optional<cv::Matx23d> toCrop =
      keypoints ? UprightBoxTransform(*keypoints, face, cropScale, size) : std::nullopt;
  return toCrop ? AlignedCropReads(*toCrop, size) : SquareAround(face, cropScale);
}

cv::Mat FaceEmbedder::Preprocess(const cv::Mat& bgr, const PixelRect& face, const FaceKeypoints* keypoints,
                                 double cropScale) const {
  const int size = spec_.inputSize;
  const std::optional<cv::Matx23d> toCrop =
      keypoints ? UprightBoxTransform(*keypoints, face, cropScale, size) : std::nullopt;
  cv::Mat resized = RecyclingMat();
  if (toCrop) {
    AlignedCrop(bgr, *toCrop, size, resized);
  } else {
    const cv::Mat square = CutPadded(bgr, SquareAround(face, cropScale));
    // INTER_AREA when shrinking: plain bilinear would alias a large face.
    if (square.cols > size)
      ResizeArea(square, resized, cv::Size(size, size));
    else
      cv::resize(square, resized, cv::Size(size, size), 0, 0, cv::INTER_LINEAR);
  }
  cv::Mat blob = RecyclingMat();
  cv::dnn::blobFromImage(resized, blob, spec_.scale, cv::Size(), cv::Scalar::all(spec_.meanValue), spec_.swapRB, false,
                         CV_32F);
  return blob;
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
