#include "ops/uint8_lookup.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace edgecv {

namespace {

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

uint8_t QuantizeUint8(float scaled, uint8_t zeroPoint) {
  const float q = std::nearbyintf(scaled) + static_cast<float>(zeroPoint);
  return static_cast<uint8_t>(q < 0.0f ? 0.0f : q > 255.0f ? 255.0f : q);
}

float DequantizeUint8(uint8_t v, float scale, uint8_t zeroPoint) {
  return scale * static_cast<float>(static_cast<int>(v) - static_cast<int>(zeroPoint));
}

LookupTable RequantizeTable(float xScale, uint8_t xZeroPoint, float yScale, uint8_t yZeroPoint) {
  LookupTable table{};
  for (int v = 0; v < 256; ++v) {
    table[v] = QuantizeUint8(DequantizeUint8(static_cast<uint8_t>(v), xScale, xZeroPoint) / yScale, yZeroPoint);
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

}  // namespace edgecv
