// Concatenation of uint8 tensors, each moved into the output's quantization on the way. onnxruntime's
// QLinearConcat does this one row of the concatenation axis at a time on one thread, with a scalar lookup for an
// input whose scale or zero point differs (in yolov5s' NHWC graph: per pixel, 32-512 channels); here the same
// rows are vector lookups (ops/uint8_lookup.h) or copies, split over the session's threads.
// ops/int8_graph_fusion.h puts it in the graph in place of QLinearConcat.
#pragma once

#if EDGECV_WITH_ONNXRUNTIME
#include "runtime/onnxruntime_api.h"

namespace edgecv {

// The operator (ops/edgecv_ops.h): QLinearConcat's inputs (y_scale, y_zero_point, then x, x_scale,
// x_zero_point for each input, every scale and zero point constant) and attribute (axis); output y (uint8).
const OrtCustomOp* RequantizeConcatOp();

}  // namespace edgecv
#endif
