// edgecv's own onnxruntime operators, in the domain "ai.edgecv": what an int8 graph's fusion
// (ops/int8_graph_fusion.h) puts in place of onnxruntime's kernels where one pass does the work of several.
#pragma once

#include <string>

namespace edgecv {

extern const char kEdgecvOpDomain[];      // "ai.edgecv"
extern const char kSiluLookupOp[];        // ops/silu_lookup_op.h
extern const char kNearestUpsampleOp[];   // ops/nearest_upsample_op.h
extern const char kRequantizeConcatOp[];  // ops/requantize_concat_op.h

}  // namespace edgecv

#if EDGECV_WITH_ONNXRUNTIME
#include <memory>

#include "runtime/onnxruntime_api.h"

namespace edgecv {

// For the operators' kernels, which must not throw into onnxruntime: an error status naming the operator.
OrtStatusPtr OpFailed(const char* op, const std::string& what);

// Sets output 0 of a shape inference to `shape`, uint8; an open size keeps its symbol, and an unknown one (< 0)
// gets a symbol of its own. Through the C API: the C++ wrapper of the headers edgecv builds with marks symbols in
// a way the onnxruntime it runs with refuses, and an output left unset reads as a scalar.
OrtStatusPtr SetUint8Output(OrtShapeInferContext* ctx, const Ort::ShapeInferContext::Shape& shape) noexcept;

// What edgecv's operators share: the CPU provider, one uint8 output, and every call from onnxruntime answered
// with a status (an exception must not cross into it). TOp gives its name (kName), its inputs' types, and
//   static std::unique_ptr<TKernel> MakeKernel(const Ort::ConstKernelInfo&);  // the node's constants read once
//   static Ort::ShapeInferContext::Shape OutputShape(Ort::ShapeInferContext&);
// TKernel gives `void Compute(Ort::KernelContext&) const`. Each may throw.
template <typename TOp, typename TKernel>
struct Uint8CpuOp : Ort::CustomOpBase<TOp, TKernel, /*WithStatus=*/true> {
  Uint8CpuOp() { this->InferOutputShapeFn = &InferShape; }

  OrtStatusPtr CreateKernelV2(const OrtApi& /*api*/, const OrtKernelInfo* info, void** kernel) const noexcept {
    try {
      // onnxruntime owns the kernel from here and deletes it through CustomOpBase's KernelDestroy.
      *kernel = TOp::MakeKernel(Ort::ConstKernelInfo(info)).release();
      return nullptr;
    } catch (const std::exception& e) {
      return OpFailed(TOp::kName, e.what());
    }
  }

  static OrtStatusPtr InferShape(const OrtCustomOp* /*op*/, OrtShapeInferContext* raw) noexcept {
    try {
      Ort::ShapeInferContext ctx(&Ort::GetApi(), raw);
      return SetUint8Output(raw, TOp::OutputShape(ctx));
    } catch (const std::exception& e) {
      return OpFailed(TOp::kName, e.what());
    }
  }

  const char* GetName() const { return TOp::kName; }
  const char* GetExecutionProviderType() const { return "CPUExecutionProvider"; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t /*index*/) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8; }
};

// The kernels' side of the same: Compute() answered with a status. TKernel names its operator (kOp).
template <typename TKernel>
struct StatusKernel {
  OrtStatusPtr ComputeV2(OrtKernelContext* context) const noexcept {
    try {
      Ort::KernelContext ctx(context);
      static_cast<const TKernel*>(this)->Compute(ctx);
      return nullptr;
    } catch (const std::exception& e) {
      return OpFailed(TKernel::kOp, e.what());
    }
  }
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

// A kernel's input that the graph fixes (an initializer); throws when it is not one.
Ort::ConstValue ConstantInput(const Ort::ConstKernelInfo& info, size_t index);

}  // namespace edgecv
#endif
