// Face embedding model (OpenCV Zoo style: preprocess -> infer ->
// postprocess). Preprocess cuts a square around the face box, turned upright when
// the face's landmarks show it tilted (native/models/face_alignment.h); the square is the
// call's `cropScale` times the box's longer side (the host sends the
// margin the model was trained with unless the caller chose one), black where it
// leaves the image, at the model input's size. Postprocess
// L2-normalizes the output, so a dot product of two embeddings is their cosine.
//
// Not thread-safe (owns an InferenceModel): one instance per worker thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "models/crop.h"
#include "models/face_alignment.h"
#include "models/image_model_spec.h"
#include "runtime/inference_model.h"
#include "runtime/stage_timings.h"

namespace edgecv {

struct FaceEmbedderSpec : ImageModelSpec {
  std::string output;  // name of the embedding output
};

class FaceEmbedder {
 public:
  // Loads the model and runs one warm-up pass that validates the output and
  // learns the embedding size. Throws std::runtime_error with a clear message.
  FaceEmbedder(const FaceEmbedderSpec& spec, const RuntimeOptions& runtime);

  // L2-normalized embedding of the face in `face` (image pixels), turned upright by `keypoints` when given and
  // tilted (null: the box crop as it lies), each stage's time added to *timings. `cropScale`: side of the square crop /
  // longer side of the face box. Throws JobError(INTERNAL) on a bad output.
  std::vector<float> Embed(const cv::Mat& bgr, const PixelRect& face, const FaceKeypoints* keypoints, double cropScale,
                           StageTimings* timings);

  // The pixels of `bgr` Embed reads for these arguments (may reach past the image).
  cv::Rect Reads(const PixelRect& face, const FaceKeypoints* keypoints, double cropScale) const;

  int dim() const { return dim_; }

 private:
  cv::Mat Preprocess(const cv::Mat& bgr, const PixelRect& face, const FaceKeypoints* keypoints, double cropScale) const;
  std::vector<float> Postprocess(const cv::Mat& output) const;

  FaceEmbedderSpec spec_;
  std::unique_ptr<InferenceModel> model_;
  int dim_ = 0;
};

}  // namespace edgecv
