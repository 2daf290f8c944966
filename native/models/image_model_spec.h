// What the spec of every image model shares: its file and runtime, its square input side and its input
// normalization. The model specs derive from it, and bindings/options.cc reads it with one helper.
#pragma once

#include "runtime/inference_model.h"

namespace edgecv {

struct ImageModelSpec {
  ModelSource model;     // ONNX file (NCHW input) and the runtime that runs it
  int inputSize = 0;     // square input side S
  double meanValue = 0;  // input = (pixel - mean) * scale
  double scale = 1;
  bool swapRB = true;  // decoded images are BGR; true feeds RGB
};

}  // namespace edgecv
