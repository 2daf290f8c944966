// Face embedding model (OpenCV Zoo style: preprocess -> infer ->
// postprocess). Preprocess cuts a square around the detected face box, enlarged
// by `cropScale` (the margin the model was trained with), pads whatever falls
// outside the image with black and resizes to the model input. Postprocess
// L2-normalizes the output, so a dot product of two embeddings is their cosine.
//
// Not thread-safe (owns an InferenceModel): one instance per worker thread.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "runtime/inference_model.h"

namespace edgecv {

struct FaceEmbedderSpec {
  ModelSource model;  // ONNX file (NCHW input) and the runtime that runs it
  int inputSize = 0;       // square input side S
  std::string output;      // name of the embedding output
  double meanValue = 0;    // input = (pixel - mean) * scale
  double scale = 1;
  bool swapRB = true;      // decoded images are BGR; true feeds RGB
  double cropScale = 1.4;  // side of the square crop / longer side of the face box
};

// [left, top, right, bottom) in image pixels.
using PixelRect = std::array<int, 4>;

class FaceEmbedder {
 public:
  // Loads the model and runs one warm-up pass that validates the output and
  // learns the embedding size. Throws std::runtime_error with a clear message.
  FaceEmbedder(const FaceEmbedderSpec& spec, const RuntimeOptions& runtime);

  // The square region (image pixels, may extend past the image) that a face box
  // maps to at `cropScale`.
  static cv::Rect SquareAround(const PixelRect& face, double cropScale);
  // Pixels of `region`, with black where it lies outside the image. A region with a side over
  // kMaxCutSide comes back shrunk to that side: every caller shrinks it further anyway, and a face rect
  // as wide as a 35000x1100 image would otherwise cost a 42000x42000 copy.
  static constexpr int kMaxCutSide = 4096;
  static cv::Mat CutPadded(const cv::Mat& bgr, const cv::Rect& region);

  // L2-normalized embedding of the face in `face` (image pixels).
  // `cropScale` <= 0 uses the spec's. Throws JobError(INTERNAL) on a bad output.
  std::vector<float> Embed(const cv::Mat& bgr, const PixelRect& face, double cropScale,
                           double* preprocessMs, double* inferenceMs);

  int dim() const { return dim_; }
  double cropScale() const { return spec_.cropScale; }

 private:
  cv::Mat Preprocess(const cv::Mat& bgr, const PixelRect& face, double cropScale) const;
  cv::Mat Infer(const cv::Mat& blob);
  std::vector<float> Postprocess(const cv::Mat& output) const;

  FaceEmbedderSpec spec_;
  std::unique_ptr<InferenceModel> model_;
  int dim_ = 0;
};

}  // namespace edgecv
