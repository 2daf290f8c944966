// The one letterbox of every model that sees a whole image or a tile of it (faces, pose, objects):
// aspect-preserving resize into the model's square input, and the way back to image pixels.
#pragma once

#include <vector>

#include <opencv2/core.hpp>

#include "models/image_model_spec.h"
#include "runtime/inference_model.h"
#include "runtime/stage_timings.h"

namespace edgecv {

// Where the letterboxed region sits inside the SxS network input.
struct Letterbox {
  float scaleX = 1, scaleY = 1;    // region pixels -> input pixels (each side is rounded on its own)
  float padX = 0, padY = 0;        // input padding left / top, in input pixels
  float originX = 0, originY = 0;  // the region's top-left corner in the image

  float ToImageX(float inputX) const { return (inputX - padX) / scaleX + originX; }
  float ToImageY(float inputY) const { return (inputY - padY) / scaleY + originY; }
};

// What is letterboxed, and on what.
struct LetterboxSource {
  cv::Rect region;      // part of the image (a tile); empty = the whole image
  double padValue = 0;  // border value: black, or YOLO's 114
  // > 0: a model with an open input size; the input is the fitted region padded up to a multiple of this on each
  // side, not to the square. 0: the spec's square.
  int roundTo = 0;
};

// Scales the region to fit spec.inputSize square, centres it on the border (of the square, or of the fitted size
// rounded up to source.roundTo), and writes the NCHW float blob
// ((pixel - meanValue) * scale, RGB when swapRB). Stretching instead would distort faces, people and objects.
Letterbox LetterboxBlob(const cv::Mat& bgr, const ImageModelSpec& spec, const LetterboxSource& source, cv::Mat* blob);

// The scaffold of every letterboxed model call: letterbox, run, decode(outputs, letterbox), timed by stage.
template <typename Decode>
auto RunLetterboxed(const cv::Mat& bgr, const ImageModelSpec& spec, InferenceModel& model, StageTimings* timings,
                    Decode&& decode, const LetterboxSource& source = {}) {
  Letterbox box;
  return RunStaged(
      model, timings,
      [&] {
        cv::Mat blob;
        box = LetterboxBlob(bgr, spec, source, &blob);
        return blob;
      },
      [&](const std::vector<cv::Mat>& outputs) { return decode(outputs, box); });
}

}  // namespace edgecv
