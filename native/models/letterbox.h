// Aspect-preserving resize into a square network input, and the way back to image pixels.
// Shared by the models that see the whole image at once (pose, objects).
#pragma once

#include <opencv2/core.hpp>

namespace edgecv {

// Where the image sits inside the SxS network input.
struct Letterbox {
  float scale = 1;  // image pixels -> input pixels (the same on both axes)
  float padX = 0;   // input padding left / top, in input pixels
  float padY = 0;

  float ToImageX(float inputX) const { return (inputX - padX) / scale; }
  float ToImageY(float inputY) const { return (inputY - padY) / scale; }
};

// Scales `bgr` to fit size x size, centres it on a `padValue` border (black by default; YOLO trains on 114),
// and writes the NCHW float blob ((pixel - mean) * scale, RGB when swapRB). Stretching instead would distort
// people and objects.
Letterbox LetterboxBlob(const cv::Mat& bgr, int size, double mean, double scale, bool swapRB, cv::Mat* blob,
                        double padValue = 0);

}  // namespace edgecv
