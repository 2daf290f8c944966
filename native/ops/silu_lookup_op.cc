#include "ops/silu_lookup_op.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "ops/edgecv_ops.h"

namespace edgecv {

LookupTable SiluLookupTable(const SiluQuantization& q) {
  LookupTable table{};
  for (int v = 0; v < 256; ++v) {
    const float x = DequantizeUint8(static_cast<uint8_t>(v), q.xScale, q.xZeroPoint);
    const uint8_t s = QuantizeUint8(1.0f / (1.0f + std::exp(-x)) / q.sigmoidScale, q.sigmoidZeroPoint);
    table[v] = QuantizeUint8(x * DequantizeUint8(s, q.sigmoidScale, q.sigmoidZeroPoint) / q.yScale, q.yZeroPoint);
  }
  return table;
}

#if EDGECV_WITH_ONNXRUNTIME

namespace {

// Bytes of a tensor one thread looks up at a time (a multiple of 64, the vector width).
constexpr size_t kSlice = 256 * 1024;

struct Slices {
  const LookupTable* table;
  const uint8_t* in;
  uint8_t* out;
  size_t n;
  static void Run(void* self, size_t i) {
    const auto* s = static_cast<const Slices*>(self);
    const size_t begin = i * kSlice;
    ApplyLookup(*s->table, s->in + begin, s->out + begin, std::min(kSlice, s->n - begin));
  }
};

class SiluLookupKernel : public StatusKernel<SiluLookupKernel> {
 public:
  static constexpr const char* kOp = kSiluLookupOp;
  explicit SiluLookupKernel(const LookupTable& table) : table_(table) {}

  void Compute(Ort::KernelContext& ctx) const {
    const Ort::ConstValue x = ctx.GetInput(0);
    const Ort::TensorTypeAndShapeInfo info = x.GetTensorTypeAndShapeInfo();
    const std::vector<int64_t> shape = info.GetShape();
    Ort::UnownedValue y = ctx.GetOutput(0, shape.data(), shape.size());
    Slices slices{&table_, x.GetTensorData<uint8_t>(), y.GetTensorMutableData<uint8_t>(), info.GetElementCount()};
    const size_t count = (slices.n + kSlice - 1) / kSlice;
    if (count < 2) {
      ApplyLookup(table_, slices.in, slices.out, slices.n);
    } else {
      // A large tensor is split over the session's threads (docs/int8.md, "edgecv's own int8 operators").
      ctx.ParallelFor(&Slices::Run, count, 0, &slices);
    }
  }

 private:
  LookupTable table_;
};

struct SiluLookupOperator : Uint8CpuOp<SiluLookupOperator, SiluLookupKernel> {
  static constexpr const char* kName = kSiluLookupOp;

  // The table, built once per node from its scales and zero points (constant initializers).
  static std::unique_ptr<SiluLookupKernel> MakeKernel(const Ort::ConstKernelInfo& info) {
    const auto scale = [&](size_t index) { return *ConstantInput(info, index).GetTensorData<float>(); };
    const auto zeroPoint = [&](size_t index) { return *ConstantInput(info, index).GetTensorData<uint8_t>(); };
    return std::make_unique<SiluLookupKernel>(
        SiluLookupTable({scale(1), zeroPoint(2), scale(3), zeroPoint(4), scale(5), zeroPoint(6)}));
  }

  // The input's shape (later ops' shape inference, and a fixed-size graph's NearestUpsample, read it).
  static Ort::ShapeInferContext::Shape OutputShape(Ort::ShapeInferContext& ctx) { return ctx.GetInputShape(0); }

  size_t GetInputTypeCount() const { return 7; }
  ONNXTensorElementDataType GetInputType(size_t index) const {
    return index == 1 || index == 3 || index == 5 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
                                                  : ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
  }
};

}  // namespace

const OrtCustomOp* SiluLookupOp() { return ProcessOp<SiluLookupOperator>(); }

#endif

}  // namespace edgecv
