// Puts SiluLookup (runtime/silu_lookup_op.h) into an onnxruntime-optimized int8 graph. onnxruntime's own passes
// turn a QDQ file into integer kernels and NHWC layout; a custom op in the QDQ file itself would stop them (its
// MaxPool fell back to float NCHW and Transposes appeared around it, docs/int8.md). So the engine lets
// onnxruntime optimize the file first, saves that graph, replaces each QLinearSigmoid + QLinearMul pair reading
// one tensor with one SiluLookup here, and loads the result with no further optimization.
//
// The ONNX protobuf is read and written at the wire level: only the nodes, the graph's value_info entries of
// the tensors it removes, and one more opset import change; every other byte is copied.
#pragma once

#include <string>
#include <string_view>

namespace edgecv {

// How many nodes of a serialized ONNX model are Sigmoids fed by a DequantizeLinear: a QDQ int8 graph with SiLUs
// that onnxruntime will fuse into QLinearSigmoid + QLinearMul. Throws std::runtime_error on malformed bytes.
int CountQdqSigmoids(std::string_view model);

struct FusedSiluGraph {
  std::string model;  // the serialized model with the pairs replaced (empty when none were found)
  int lookups = 0;    // pairs replaced
};

// Replaces, in a serialized model onnxruntime optimized (com.microsoft QLinearSigmoid and QLinearMul), each
// QLinearMul of a tensor x by QLinearSigmoid(x), when that sigmoid has no other reader, with one
// ai.edgecv.SiluLookup. Throws std::runtime_error on malformed bytes.
FusedSiluGraph FuseSiluLookups(std::string_view model);

}  // namespace edgecv
