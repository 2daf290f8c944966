// 256-entry lookups over uint8 tensors, the arithmetic of edgecv's int8 operators (ops/edgecv_ops.h): a
// function of one uint8 value is a table, built with onnxruntime's own quantization arithmetic so the operators
// give its kernels' results bit for bit, and applied 64 bytes at a time with AVX-512 VBMI.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace edgecv {

using LookupTable = std::array<uint8_t, 256>;

// onnxruntime's QuantizeLinear to uint8 of a value already divided by the scale: round half to even (the
// default rounding mode), add the zero point, saturate.
uint8_t QuantizeUint8(float scaled, uint8_t zeroPoint);
// onnxruntime's dequantization: scale * (v - zeroPoint).
float DequantizeUint8(uint8_t v, float scale, uint8_t zeroPoint);

// table[x] = x moved from one quantization to another (what QLinearConcat does to an input whose scale or zero
// point differs from its output's).
LookupTable RequantizeTable(float xScale, uint8_t xZeroPoint, float yScale, uint8_t yZeroPoint);

// out[i] = table[in[i]]; `in` and `out` may be the same.
void ApplyLookup(const LookupTable& table, const uint8_t* in, uint8_t* out, size_t n);

// True when ApplyLookup has a vector path on this CPU (x86 with AVX-512 VBMI and BW). Without one, a scalar
// lookup is no faster than onnxruntime's own kernels, so the engine leaves int8 graphs as they are.
bool LookupIsVectorized();

}  // namespace edgecv
