#include "ops/requantize_concat_op.h"

#if EDGECV_WITH_ONNXRUNTIME

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/edgecv_ops.h"
#include "ops/uint8_lookup.h"

namespace edgecv {

namespace {

// Rows (of all inputs together) one thread concatenates at a time, at least.
constexpr size_t kMinBytesPerTask = 64 * 1024;

struct ConcatInput {
  const uint8_t* data = nullptr;
  size_t pitch = 0;                  // bytes of one row: the axis and every dimension after it
  std::optional<LookupTable> table;  // none: the same quantization as the output, copied
};

struct ConcatRun {
  std::vector<ConcatInput> inputs;
  uint8_t* out = nullptr;
  size_t outPitch = 0;
  size_t rows = 0;
  size_t rowsPerTask = 0;

  void Rows(size_t begin, size_t end) const {
    for (size_t row = begin; row < end; ++row) {
      uint8_t* dst = out + row * outPitch;
      for (const ConcatInput& input : inputs) {
        const uint8_t* src = input.data + row * input.pitch;
        if (input.table)
          ApplyLookup(*input.table, src, dst, input.pitch);
        else
          std::memcpy(dst, src, input.pitch);
        dst += input.pitch;
      }
    }
  }
  static void Task(void* self, size_t i) {
    const auto* run = static_cast<const ConcatRun*>(self);
    const size_t begin = i * run->rowsPerTask;
    run->Rows(begin, std::min(run->rows, begin + run->rowsPerTask));
  }
};

class RequantizeConcatKernel : public StatusKernel<RequantizeConcatKernel> {
 public:
  static constexpr const char* kOp = kRequantizeConcatOp;
  RequantizeConcatKernel(int64_t axis, std::vector<std::optional<LookupTable>> tables)
      : axis_(axis), tables_(std::move(tables)) {}

  void Compute(Ort::KernelContext& ctx) const {
    std::vector<int64_t> outShape;
    size_t axis = 0;
    ConcatRun run;
    for (size_t i = 0; i < tables_.size(); ++i) {
      const Ort::ConstValue x = ctx.GetInput(2 + 3 * i);
      const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
      if (i == 0) {
        const int64_t rank = static_cast<int64_t>(shape.size());
        if (axis_ < -rank || axis_ >= rank) throw std::runtime_error("axis out of range");
        axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
        outShape = shape;
        outShape[axis] = 0;
      } else if (shape.size() != outShape.size()) {
        throw std::runtime_error("inputs of different ranks");
      }
      size_t pitch = 1;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (i > 0 && d != axis && shape[d] != outShape[d]) throw std::runtime_error("inputs differ off the axis");
        if (d >= axis) pitch *= static_cast<size_t>(shape[d]);
      }
      outShape[axis] += shape[axis];
      run.inputs.push_back({x.GetTensorData<uint8_t>(), pitch, tables_[i]});
      run.outPitch += pitch;
    }
    run.rows = 1;
    for (size_t d = 0; d < axis; ++d) run.rows *= static_cast<size_t>(outShape[d]);
    Ort::UnownedValue y = ctx.GetOutput(0, outShape.data(), outShape.size());
    run.out = y.GetTensorMutableData<uint8_t>();
    run.rowsPerTask = std::max<size_t>(1, kMinBytesPerTask / std::max<size_t>(1, run.outPitch));
    const size_t tasks = (run.rows + run.rowsPerTask - 1) / run.rowsPerTask;
    if (tasks < 2)
      run.Rows(0, run.rows);
    else
      ctx.ParallelFor(&ConcatRun::Task, tasks, 0, &run);
  }

 private:
  int64_t axis_;
  std::vector<std::optional<LookupTable>> tables_;  // one per input
};

struct RequantizeConcatOperator : Uint8CpuOp<RequantizeConcatOperator, RequantizeConcatKernel> {
  static constexpr const char* kName = kRequantizeConcatOp;

  // Each input's table, built from the constant scales and zero points as QLinearConcat builds its own: none
  // where an input's quantization is the output's (copied, as QLinearConcat copies it).
  static std::unique_ptr<RequantizeConcatKernel> MakeKernel(const Ort::ConstKernelInfo& info) {
    const size_t count = info.GetInputCount();
    if (count < 5 || (count - 2) % 3 != 0)
      throw std::runtime_error("expected y_scale, y_zero_point and (x, scale, zero point) triples");
    const auto scale = [&](size_t index) { return *ConstantInput(info, index).GetTensorData<float>(); };
    const auto zeroPoint = [&](size_t index) { return *ConstantInput(info, index).GetTensorData<uint8_t>(); };
    const float yScale = scale(0);
    const uint8_t yZeroPoint = zeroPoint(1);
    std::vector<std::optional<LookupTable>> tables;
    for (size_t first = 2; first < count; first += 3) {
      const float xScale = scale(first + 1);
      const uint8_t xZeroPoint = zeroPoint(first + 2);
      if (xScale == yScale && xZeroPoint == yZeroPoint)
        tables.emplace_back();
      else
        tables.emplace_back(RequantizeTable(xScale, xZeroPoint, yScale, yZeroPoint));
    }
    return std::make_unique<RequantizeConcatKernel>(info.GetAttribute<int64_t>("axis"), std::move(tables));
  }

  // The first input's shape with the axis summed over the inputs (unknown where any of them is open there).
  static Ort::ShapeInferContext::Shape OutputShape(Ort::ShapeInferContext& ctx) {
    Ort::ShapeInferContext::Shape shape = ctx.GetInputShape(2);
    const int64_t rank = static_cast<int64_t>(shape.size());
    int64_t axis = ctx.GetAttrInt("axis");
    if (axis < -rank || axis >= rank) throw std::runtime_error("axis out of range");
    if (axis < 0) axis += rank;
    int64_t sum = 0;
    for (size_t i = 2; i < ctx.GetInputCount(); i += 3) {
      const auto& dim = ctx.GetInputShape(i).at(static_cast<size_t>(axis));
      sum = sum >= 0 && dim.IsInt() && dim.AsInt() >= 0 ? sum + dim.AsInt() : -1;
    }
    shape[static_cast<size_t>(axis)] = sum;
    return shape;
  }

  // y_scale, y_zero_point, then the (x, scale, zero point) triples as one variadic input of mixed types
  size_t GetInputTypeCount() const { return 3; }
  ONNXTensorElementDataType GetInputType(size_t index) const {
    return index == 0   ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
           : index == 1 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8
                        : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t index) const {
    return index == 2 ? INPUT_OUTPUT_VARIADIC : INPUT_OUTPUT_REQUIRED;
  }
  int GetVariadicInputMinArity() const { return 3; }
  bool GetVariadicInputHomogeneity() const { return false; }
};

}  // namespace

const OrtCustomOp* RequantizeConcatOp() { return ProcessOp<RequantizeConcatOperator>(); }

}  // namespace edgecv

#endif
