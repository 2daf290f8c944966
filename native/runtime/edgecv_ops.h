// edgecv's own onnxruntime operators, in the domain "ai.edgecv": what an int8 graph's fusion
// (runtime/int8_graph_fusion.h) puts in place of onnxruntime's kernels where one pass does the work of several.
#pragma once

#include <string>

namespace edgecv {

extern const char kEdgecvOpDomain[];    // "ai.edgecv"
extern const char kSiluLookupOp[];      // runtime/silu_lookup_op.h
extern const char kNearestUpsampleOp[]; // runtime/nearest_upsample_op.h
extern const char kRequantizeConcatOp[];  // runtime/requantize_concat_op.h

}  // namespace edgecv

#if EDGECV_WITH_ONNXRUNTIME
#include <memory>

#include "runtime/onnxruntime_api.h"

namespace edgecv {

// What edgecv's operators share: the CPU provider, one uint8 output, and kernels made and run through statuses
// (an exception must not cross into onnxruntime).
template <typename TOp, typename TKernel>
struct Uint8CpuOp : Ort::CustomOpBase<TOp, TKernel, /*WithStatus=*/true> {
  const char* GetExecutionProviderType() const { return "CPUExecutionProvider"; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t /*index*/) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8; }
};

// The process's one instance of an operator, never destroyed (see EdgecvOpDomain()).
template <typename TOp>
const OrtCustomOp* ProcessOp() {
  static const TOp* const op = std::make_unique<TOp>().release();
  return op;
}

// The domain with every operator above, to add to the options of a session made from a fused graph. Lives as
// long as the process: onnxruntime keeps pointers to it (and to the operators) in every such session, and
// sessions of engines never closed still hold them at exit, as they hold the library (onnxruntime_library.cc).
Ort::CustomOpDomain& EdgecvOpDomain();

// For the operators' kernels, which must not throw into onnxruntime: an error status naming the operator.
OrtStatusPtr OpFailed(const char* op, const std::string& what);

// Sets output 0 of a shape inference to `shape`, uint8; an open size keeps its symbol, and an unknown one (< 0)
// gets a symbol of its own. Through the C API: the C++ wrapper of the headers edgecv builds with marks symbols in
// a way the onnxruntime it runs with refuses, and an output left unset reads as a scalar.
OrtStatusPtr SetUint8Output(OrtShapeInferContext* ctx, const Ort::ShapeInferContext::Shape& shape) noexcept;

// A kernel's input that the graph fixes (an initializer); throws when it is not one.
Ort::ConstValue ConstantInput(const Ort::ConstKernelInfo& info, size_t index);

}  // namespace edgecv
#endif
