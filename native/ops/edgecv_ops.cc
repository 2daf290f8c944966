#include "ops/edgecv_ops.h"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ops/nearest_upsample_op.h"
#include "ops/requantize_concat_op.h"
#include "ops/silu_lookup_op.h"

namespace edgecv {

const char kEdgecvOpDomain[] = "ai.edgecv";
const char kSiluLookupOp[] = "SiluLookup";
const char kNearestUpsampleOp[] = "NearestUpsample";
const char kRequantizeConcatOp[] = "RequantizeConcat";

#if EDGECV_WITH_ONNXRUNTIME

namespace {

struct EdgecvOps {
  Ort::CustomOpDomain domain{kEdgecvOpDomain};
  EdgecvOps() {
    domain.Add(SiluLookupOp());
    domain.Add(NearestUpsampleOp());
    domain.Add(RequantizeConcatOp());
  }
};

}  // namespace

Ort::CustomOpDomain& EdgecvOpDomain() {
  static EdgecvOps* const ops = std::make_unique<EdgecvOps>().release();  // never destroyed: see the header
  return ops->domain;
}

OrtStatusPtr OpFailed(const char* op, const std::string& what) {
  return Ort::GetApi().CreateStatus(ORT_RUNTIME_EXCEPTION, (std::string(op) + ": " + what).c_str());
}

OrtStatusPtr SetUint8Output(OrtShapeInferContext* ctx, const Ort::ShapeInferContext::Shape& shape) noexcept {
  try {
    static std::atomic<uint64_t> unknowns{0};
    std::vector<int64_t> sizes;
    std::vector<std::string> names;
    for (const auto& dim : shape) {
      const bool known = dim.IsInt() && dim.AsInt() >= 0;
      sizes.push_back(known ? dim.AsInt() : -1);  // -1: named by its symbol
      names.push_back(known ? "" : dim.IsInt() ? "edgecv_unknown_" + std::to_string(unknowns++) : dim.AsSym());
    }
    std::vector<const char*> symbols;
    for (const std::string& name : names) symbols.push_back(name.c_str());
    const OrtApi& api = Ort::GetApi();
    OrtTensorTypeAndShapeInfo* raw = nullptr;
    if (OrtStatusPtr status = api.CreateTensorTypeAndShapeInfo(&raw)) return status;
    const std::unique_ptr<OrtTensorTypeAndShapeInfo, void (*)(OrtTensorTypeAndShapeInfo*)> info(
        raw, [](OrtTensorTypeAndShapeInfo* p) { Ort::GetApi().ReleaseTensorTypeAndShapeInfo(p); });
    if (OrtStatusPtr status = api.SetTensorElementType(raw, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8)) return status;
    if (OrtStatusPtr status = api.SetDimensions(raw, sizes.data(), sizes.size())) return status;
    if (OrtStatusPtr status = api.SetSymbolicDimensions(raw, symbols.data(), symbols.size())) return status;
    return api.ShapeInferContext_SetOutputTypeShape(ctx, 0, raw);
  } catch (const std::exception& e) {
    return Ort::GetApi().CreateStatus(ORT_INVALID_ARGUMENT, e.what());
  }
}

Ort::ConstValue ConstantInput(const Ort::ConstKernelInfo& info, size_t index) {
  int isConstant = 0;
  Ort::ConstValue value = info.GetTensorConstantInput(index, &isConstant);
  if (!isConstant) throw std::runtime_error("input " + std::to_string(index) + " is not a constant");
  return value;
}

#endif

}  // namespace edgecv
