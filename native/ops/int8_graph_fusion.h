// Puts edgecv's operators (ops/edgecv_ops.h) into an onnxruntime-optimized int8 graph. onnxruntime's own
// passes turn a QDQ file into integer kernels in NHWC layout; a custom op in the QDQ file itself would stop
// them (its MaxPool fell back to float NCHW and Transposes appeared around it, docs/int8.md). So the engine
// lets onnxruntime optimize the file first and save that graph; here, in the saved graph:
// - each QLinearSigmoid + QLinearMul pair computing x * sigmoid(x) becomes one SiluLookup;
// - each nearest Resize of a SiluLookup's output by whole factors on H and W, whose result is each pixel
//   copied, becomes one NearestUpsample;
// - each QLinearConcat of uint8 tensors with constant scales and zero points becomes one RequantizeConcat.
// The engine loads the result with no further optimization. The protobuf is handled at the wire level
// (ops/onnx_wire.h): only nodes, the value_info entries of removed tensors and one opset import change.
#pragma once

#include <string>
#include <string_view>

namespace edgecv {

// How many nodes of a serialized ONNX model are Sigmoids fed by a DequantizeLinear: a QDQ int8 graph with SiLUs,
// which onnxruntime turns into QLinearSigmoid + QLinearMul. Throws std::runtime_error on malformed bytes.
int CountQdqSigmoids(std::string_view model);

struct FusedInt8Graph {
  std::string model;  // the serialized model with the nodes replaced (empty when nothing was)
  int siluLookups = 0;
  int upsamples = 0;
  int concats = 0;
};

// Fuses a serialized model onnxruntime optimized (see above). Throws std::runtime_error on malformed bytes.
FusedInt8Graph FuseInt8Graph(std::string_view optimizedModel);

}  // namespace edgecv
