#include "ops/nearest_upsample_op.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <stdexcept>
#include <vector>

#include "ops/edgecv_ops.h"

namespace edgecv {

void UpsampleNearest(const uint8_t* in, int64_t n, int64_t h, int64_t w, int64_t c, int fy, int fx, uint8_t* out) {
  const size_t pixel = static_cast<size_t>(c);
  const size_t outRow = static_cast<size_t>(w * fx) * pixel;
  for (int64_t row = 0; row < n * h; ++row) {
    const uint8_t* src = in + static_cast<size_t>(row * w) * pixel;
    uint8_t* first = out + static_cast<size_t>(row * fy) * outRow;
    uint8_t* dst = first;
    for (int64_t x = 0; x < w; ++x, src += pixel) {
      for (int k = 0; k < fx; ++k, dst += pixel) std::memcpy(dst, src, pixel);
    }
    for (int k = 1; k < fy; ++k) std::memcpy(first + k * outRow, first, outRow);
  }
}

#if EDGECV_WITH_ONNXRUNTIME

namespace {

class NearestUpsampleKernel : public StatusKernel<NearestUpsampleKernel> {
 public:
  static constexpr const char* kOp = kNearestUpsampleOp;
  NearestUpsampleKernel(int fy, int fx) : fy_(fy), fx_(fx) {}

  void Compute(Ort::KernelContext& ctx) const {
    const Ort::ConstValue x = ctx.GetInput(0);
    const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
    if (shape.size() != 4) throw std::runtime_error("expected an NHWC tensor");
    const std::vector<int64_t> outShape{shape[0], shape[1] * fy_, shape[2] * fx_, shape[3]};
    Ort::UnownedValue y = ctx.GetOutput(0, outShape.data(), outShape.size());
    UpsampleNearest(x.GetTensorData<uint8_t>(), shape[0], shape[1], shape[2], shape[3], fy_, fx_,
                    y.GetTensorMutableData<uint8_t>());
  }

 private:
  int fy_, fx_;
};

// A node's ints attribute, or nothing when it has none of that name (the API only tells by throwing).
std::vector<int64_t> IntsAttribute(const Ort::ConstKernelInfo& info, const char* name) {
  try {
    return info.GetAttributes<int64_t>(name);
  } catch (const Ort::Exception&) {
    return {};
  }
}

Ort::ShapeInferContext::Ints IntsAttribute(Ort::ShapeInferContext& ctx, const char* name) {
  try {
    return ctx.GetAttrInts(name);
  } catch (const Ort::Exception&) {
    return {};
  }
}

// The node's factors: its "factors" attribute [fy, fx] (from Resize's scales), or its "sizes" attribute
// [n, h * fy, w * fx, c] (from Resize's sizes) checked against the input's shape, which must then be fixed.
std::pair<int, int> Factors(const Ort::ConstKernelInfo& info) {
  const auto whole = [](int64_t f) { return f >= 1 && f <= 64; };
  const std::vector<int64_t> f = IntsAttribute(info, "factors");
  if (!f.empty()) {
    if (f.size() != 2 || !whole(f[0]) || !whole(f[1])) throw std::runtime_error("factors must be 2 whole numbers");
    return {static_cast<int>(f[0]), static_cast<int>(f[1])};
  }
  const std::vector<int64_t> sizes = IntsAttribute(info, "sizes");
  const std::vector<int64_t> in = info.GetInputTypeInfo(0).GetTensorTypeAndShapeInfo().GetShape();
  if (sizes.size() != 4 || in.size() != 4 || in[1] <= 0 || in[2] <= 0)
    throw std::runtime_error("sizes need an input of fixed shape");
  if (sizes[0] != in[0] || sizes[3] != in[3] || sizes[1] % in[1] || sizes[2] % in[2] || !whole(sizes[1] / in[1]) ||
      !whole(sizes[2] / in[2])) {
    throw std::runtime_error("sizes must scale H and W of the input by whole factors, and nothing else");
  }
  return {static_cast<int>(sizes[1] / in[1]), static_cast<int>(sizes[2] / in[2])};
}

struct NearestUpsampleOperator : Uint8CpuOp<NearestUpsampleOperator, NearestUpsampleKernel> {
  static constexpr const char* kName = kNearestUpsampleOp;

  static std::unique_ptr<NearestUpsampleKernel> MakeKernel(const Ort::ConstKernelInfo& info) {
    const auto [fy, fx] = Factors(info);
    return std::make_unique<NearestUpsampleKernel>(fy, fx);
  }

  // For the ops after it (a fixed-size graph's later upsamplings check theirs when they load).
  static Ort::ShapeInferContext::Shape OutputShape(Ort::ShapeInferContext& ctx) {
    Ort::ShapeInferContext::Shape shape = ctx.GetInputShape(0);
    if (shape.size() != 4) throw std::runtime_error("expected an NHWC tensor");
    const Ort::ShapeInferContext::Ints sizes = IntsAttribute(ctx, "sizes");
    const Ort::ShapeInferContext::Ints factors = IntsAttribute(ctx, "factors");
    if (sizes.size() == 4) return Ort::ShapeInferContext::Shape(sizes.begin(), sizes.end());
    for (size_t axis : {size_t{1}, size_t{2}}) {
      const bool known = factors.size() == 2 && shape[axis].IsInt() && shape[axis].AsInt() >= 0;
      shape[axis] = known ? shape[axis].AsInt() * factors[axis - 1] : int64_t{-1};  // open: unknown
    }
    return shape;
  }

  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t /*index*/) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8; }
};

}  // namespace

const OrtCustomOp* NearestUpsampleOp() { return ProcessOp<NearestUpsampleOperator>(); }

#endif

}  // namespace edgecv
