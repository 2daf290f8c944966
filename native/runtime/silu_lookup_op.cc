#include "runtime/silu_lookup_op.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/edgecv_ops.h"

namespace edgecv {

namespace {

// onnxruntime's QuantizeLinear for uint8: round half to even (the default rounding mode), add the zero point,
// saturate.
uint8_t Quantize(float scaled, uint8_t zeroPoint) {
  const float q = std::nearbyintf(scaled) + static_cast<float>(zeroPoint);
  return static_cast<uint8_t>(q < 0.0f ? 0.0f : q > 255.0f ? 255.0f : q);
}

float Dequantize(uint8_t v, float scale, uint8_t zeroPoint) {
  return scale * static_cast<float>(static_cast<int>(v) - static_cast<int>(zeroPoint));
}

#if defined(__x86_64__)
#define EDGECV_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

// vpermi2b looks up 64 bytes at once in a 128-byte table (an index's 7 low bits); its top bit picks the half.
EDGECV_VBMI inline __m512i Lookup64(const __m512i table[4], __m512i index) {
  const __m512i low = _mm512_permutex2var_epi8(table[0], index, table[1]);
  const __m512i high = _mm512_permutex2var_epi8(table[2], index, table[3]);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(index), low, high);
}

EDGECV_VBMI void ApplyLookupVbmi(const LookupTable& table, const uint8_t* in, uint8_t* out, size_t n) {
  const __m512i t[4] = {_mm512_loadu_si512(table.data()), _mm512_loadu_si512(table.data() + 64),
                        _mm512_loadu_si512(table.data() + 128), _mm512_loadu_si512(table.data() + 192)};
  size_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(out + i, Lookup64(t, _mm512_loadu_si512(in + i)));
  if (i < n) {
    const __mmask64 tail = (uint64_t{1} << (n - i)) - 1;
    _mm512_mask_storeu_epi8(out + i, tail, Lookup64(t, _mm512_maskz_loadu_epi8(tail, in + i)));
  }
}
#undef EDGECV_VBMI
#endif

}  // namespace

LookupTable SiluLookupTable(const SiluQuantization& q) {
  LookupTable table{};
  for (int v = 0; v < 256; ++v) {
    const float x = Dequantize(static_cast<uint8_t>(v), q.xScale, q.xZeroPoint);
    const uint8_t s = Quantize(1.0f / (1.0f + std::exp(-x)) / q.sigmoidScale, q.sigmoidZeroPoint);
    table[v] = Quantize(x * Dequantize(s, q.sigmoidScale, q.sigmoidZeroPoint) / q.yScale, q.yZeroPoint);
  }
  return table;
}

bool LookupIsVectorized() {
#if defined(__x86_64__)
  static const bool vbmi = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
  return vbmi;
#else
  return false;
#endif
}

void ApplyLookup(const LookupTable& table, const uint8_t* in, uint8_t* out, size_t n) {
#if defined(__x86_64__)
  if (LookupIsVectorized()) {
    ApplyLookupVbmi(table, in, out, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; ++i) out[i] = table[in[i]];
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

class SiluLookupKernel {
 public:
  explicit SiluLookupKernel(const LookupTable& table) : table_(table) {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const noexcept {
    try {
      Ort::KernelContext ctx(context);
      const Ort::ConstValue x = ctx.GetInput(0);
      const Ort::TensorTypeAndShapeInfo info = x.GetTensorTypeAndShapeInfo();
      const std::vector<int64_t> shape = info.GetShape();
      Ort::UnownedValue y = ctx.GetOutput(0, shape.data(), shape.size());
      Slices slices{&table_, x.GetTensorData<uint8_t>(), y.GetTensorMutableData<uint8_t>(), info.GetElementCount()};
      const size_t count = (slices.n + kSlice - 1) / kSlice;
      if (count < 2) {
        ApplyLookup(table_, slices.in, slices.out, slices.n);
      } else {
        // A large tensor is split over the session's threads (yolov5s at 640x480: 0.2-0.3 ms a run).
        ctx.ParallelFor(&Slices::Run, count, 0, &slices);
      }
      return nullptr;
    } catch (const std::exception& e) {
      return OpFailed(kSiluLookupOp, e.what());
    }
  }

 private:
  LookupTable table_;
};

struct SiluLookupOperator : Uint8CpuOp<SiluLookupOperator, SiluLookupKernel> {
  // The table is built here, once per node, from the scales and zero points (constant initializers).
  OrtStatusPtr CreateKernelV2(const OrtApi& /*api*/, const OrtKernelInfo* info, void** kernel) const noexcept {
    try {
      const Ort::ConstKernelInfo kernelInfo(info);
      const auto scale = [&](size_t index) { return *ConstantInput(kernelInfo, index).GetTensorData<float>(); };
      const auto zeroPoint = [&](size_t index) { return *ConstantInput(kernelInfo, index).GetTensorData<uint8_t>(); };
      const SiluQuantization q{scale(1), zeroPoint(2), scale(3), zeroPoint(4), scale(5), zeroPoint(6)};
      // onnxruntime owns the kernel from here and deletes it through CustomOpBase's KernelDestroy.
      *kernel = std::make_unique<SiluLookupKernel>(SiluLookupTable(q)).release();
      return nullptr;
    } catch (const std::exception& e) {
      return OpFailed(kSiluLookupOp, e.what());
    }
  }

  SiluLookupOperator() { InferOutputShapeFn = &InferShape; }

  // The output has the input's shape (later ops' shape inference, and a fixed-size graph's NearestUpsample, read it).
  static OrtStatusPtr InferShape(const OrtCustomOp* /*op*/, OrtShapeInferContext* raw) noexcept {
    try {
      Ort::ShapeInferContext ctx(&Ort::GetApi(), raw);
      return SetUint8Output(raw, ctx.GetInputShape(0));
    } catch (const std::exception& e) {
      return OpFailed(kSiluLookupOp, e.what());
    }
  }

  const char* GetName() const { return kSiluLookupOp; }
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
