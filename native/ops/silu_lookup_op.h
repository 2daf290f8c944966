// One int8 SiLU as one 256-entry lookup. An int8 YOLOv5 graph runs each SiLU as onnxruntime's QLinearSigmoid
// then QLinearMul: two passes over the tensor, the first a scalar lookup that onnxruntime splits over threads
// only for large tensors. Both are functions of one uint8 input, so their composition is a table of 256 bytes,
// built once per node from its constant scales with the arithmetic onnxruntime uses (ops/uint8_lookup.h);
// ops/int8_graph_fusion.h puts it in the graph.
#pragma once

#include <cstdint>

#include "ops/uint8_lookup.h"

namespace edgecv {

// The quantization of a SiLU's input x, of its sigmoid s (QLinearSigmoid's output) and of x * s.
struct SiluQuantization {
  float xScale;
  uint8_t xZeroPoint;
  float sigmoidScale;
  uint8_t sigmoidZeroPoint;
  float yScale;
  uint8_t yZeroPoint;
};

// table[x] = QLinearMul(x, QLinearSigmoid(x)): the same roundings, in the same order, as onnxruntime's kernels.
LookupTable SiluLookupTable(const SiluQuantization& q);

}  // namespace edgecv

#if EDGECV_WITH_ONNXRUNTIME
#include "runtime/onnxruntime_api.h"

namespace edgecv {

// The operator (ops/edgecv_ops.h): inputs x, x_scale, x_zero_point, sigmoid_scale, sigmoid_zero_point,
// y_scale, y_zero_point (all but x constant), output y, all uint8 but the float scales.
const OrtCustomOp* SiluLookupOp();

}  // namespace edgecv
#endif
