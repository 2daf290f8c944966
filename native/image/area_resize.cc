#include "image/area_resize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include <opencv2/imgproc.hpp>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

namespace edgecv {
namespace {

#if defined(__SSE2__)
// One source sample's share of one destination sample: dst[di] += src[si] * alpha (indices in channels).
struct Tap {
  int di, si;
  float alpha;
};

// OpenCV's computeResizeAreaTab (imgproc/src/resize.cpp), the same doubles rounded to the same floats.
std::vector<Tap> AreaTaps(int sourceSize, int size, int channels, double scale) {
  std::vector<Tap> taps;
  for (int d = 0; d < size; ++d) {
    const double from = d * scale, to = from + scale;
    const double cell = std::min(scale, sourceSize - from);
    int first = cvCeil(from), last = cvFloor(to);
    last = std::min(last, sourceSize - 1);
    first = std::min(first, last);
    if (first - from > 1e-3)
      taps.push_back({d * channels, (first - 1) * channels, static_cast<float>((first - from) / cell)});
    for (int s = first; s < last; ++s) taps.push_back({d * channels, s * channels, static_cast<float>(1.0 / cell)});
    if (to - last > 1e-3) {
      taps.push_back(
          {d * channels, last * channels, static_cast<float>(std::min(std::min(to - last, 1.), cell) / cell)});
    }
  }
  return taps;
}

constexpr int kRows = 4;  // source rows per pass, one per float lane

// Source values of kRows rows as floats, lane r = row r: out[x * kRows + r] = rows[r][x].
void Interleave(const uchar* const rows[kRows], int width, float* out) {
  const __m128i zero = _mm_setzero_si128();
  int x = 0;
  for (; x + 16 <= width; x += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + x));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + x));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2] + x));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[3] + x));
    const __m128i abLo = _mm_unpacklo_epi8(a, b), abHi = _mm_unpackhi_epi8(a, b);
    const __m128i cdLo = _mm_unpacklo_epi8(c, d), cdHi = _mm_unpackhi_epi8(c, d);
    // Each 32-bit lane now holds one x's four rows (a, b, c, d), four x's a register.
    const __m128i quads[4] = {_mm_unpacklo_epi16(abLo, cdLo), _mm_unpackhi_epi16(abLo, cdLo),
                              _mm_unpacklo_epi16(abHi, cdHi), _mm_unpackhi_epi16(abHi, cdHi)};
    float* o = out + x * kRows;
    for (const __m128i& q : quads) {
      const __m128i lo = _mm_unpacklo_epi8(q, zero), hi = _mm_unpackhi_epi8(q, zero);
      _mm_storeu_ps(o, _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, zero)));
      _mm_storeu_ps(o + 4, _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, zero)));
      _mm_storeu_ps(o + 8, _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, zero)));
      _mm_storeu_ps(o + 12, _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, zero)));
      o += 16;
    }
  }
  for (; x < width; ++x) {
    for (int r = 0; r < kRows; ++r) out[x * kRows + r] = rows[r][x];
  }
}

// The horizontal sums of kRows rows of 3 channels: laneSums[di * kRows + k] = sum of lanes[si * kRows + k] * alpha
// over the taps of di, in their order, from 0 (as OpenCV adds them into a zeroed buffer), kept in registers.
void SumTaps(const std::vector<Tap>& xtab, const float* lanes, float* laneSums) {
  static_assert(3 * kRows == 12, "three registers per destination sample");
  for (size_t i = 0; i < xtab.size();) {
    const int di = xtab[i].di;
    __m128 a0 = _mm_setzero_ps(), a1 = _mm_setzero_ps(), a2 = _mm_setzero_ps();
    for (; i < xtab.size() && xtab[i].di == di; ++i) {
      const __m128 alpha = _mm_set1_ps(xtab[i].alpha);
      const float* s = lanes + static_cast<size_t>(xtab[i].si) * kRows;
      a0 = _mm_add_ps(a0, _mm_mul_ps(_mm_loadu_ps(s), alpha));
      a1 = _mm_add_ps(a1, _mm_mul_ps(_mm_loadu_ps(s + 4), alpha));
      a2 = _mm_add_ps(a2, _mm_mul_ps(_mm_loadu_ps(s + 8), alpha));
    }
    float* b = laneSums + static_cast<size_t>(di) * kRows;
    _mm_storeu_ps(b, a0);
    _mm_storeu_ps(b + 4, a1);
    _mm_storeu_ps(b + 8, a2);
  }
}

// sum = beta * buf (start: a new destination row) or sum += beta * buf, a multiplication then an addition each.
void Accumulate(const float* buf, float beta, int width, float* sum, bool start) {
  const __m128 b = _mm_set1_ps(beta);
  int x = 0;
  for (; x + 4 <= width; x += 4) {
    const __m128 product = _mm_mul_ps(b, _mm_loadu_ps(buf + x));
    _mm_storeu_ps(sum + x, start ? product : _mm_add_ps(_mm_loadu_ps(sum + x), product));
  }
  for (; x < width; ++x) sum[x] = start ? beta * buf[x] : sum[x] + beta * buf[x];
}

// out = saturate_cast<uchar>(sum): rounded to nearest even (the default rounding mode, as cvRound), clamped.
void WriteRow(const float* sum, int width, uchar* out) {
  int x = 0;
  for (; x + 8 <= width; x += 8) {
    const __m128i lo = _mm_cvtps_epi32(_mm_loadu_ps(sum + x)), hi = _mm_cvtps_epi32(_mm_loadu_ps(sum + x + 4));
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(lo, hi), _mm_setzero_si128());
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + x), bytes);
  }
  for (; x < width; ++x) out[x] = cv::saturate_cast<uchar>(sum[x]);
}

// ResizeArea_Invoker<uchar, float> of OpenCV for 3 channels, one destination range covering the image: each
// source row (ytab entry) is summed horizontally with the x taps into buf, then added into sum with its y weight;
// a destination row is written when the next entry belongs to the next one. The horizontal sums of kRows rows
// run together, one row per lane: every value still sees the same multiplications and additions in the same order.
void ResizeArea8UC3(const cv::Mat& src, cv::Mat& dst, double scaleX, double scaleY) {
  const int cn = 3;
  const std::vector<Tap> xtab = AreaTaps(src.cols, dst.cols, cn, scaleX);
  const std::vector<Tap> ytab = AreaTaps(src.rows, dst.rows, 1, scaleY);
  const int width = dst.cols * cn, sourceWidth = src.cols * cn;
  const int entries = static_cast<int>(ytab.size());
  std::vector<float> lanes(static_cast<size_t>(sourceWidth) * kRows), laneSums(static_cast<size_t>(width) * kRows),
      rowSums(static_cast<size_t>(width) * kRows), sum(width, 0.f);
  int prevDy = ytab[0].di;
  for (int j0 = 0; j0 < entries; j0 += kRows) {
    const int rows = std::min(kRows, entries - j0);
    const uchar* source[kRows];
    for (int r = 0; r < kRows; ++r) source[r] = src.ptr<uchar>(ytab[j0 + std::min(r, rows - 1)].si);
    Interleave(source, sourceWidth, lanes.data());
    SumTaps(xtab, lanes.data(), laneSums.data());
    // Back to one row per lane: rowSums[r * width + d].
    int d = 0;
    for (; d + 4 <= width; d += 4) {
      __m128 r0 = _mm_loadu_ps(&laneSums[d * kRows]), r1 = _mm_loadu_ps(&laneSums[(d + 1) * kRows]);
      __m128 r2 = _mm_loadu_ps(&laneSums[(d + 2) * kRows]), r3 = _mm_loadu_ps(&laneSums[(d + 3) * kRows]);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(&rowSums[d], r0);
      _mm_storeu_ps(&rowSums[width + d], r1);
      _mm_storeu_ps(&rowSums[2 * width + d], r2);
      _mm_storeu_ps(&rowSums[3 * width + d], r3);
    }
    for (; d < width; ++d) {
      for (int r = 0; r < kRows; ++r) rowSums[r * width + d] = laneSums[d * kRows + r];
    }
    for (int r = 0; r < rows; ++r) {
      const float beta = ytab[j0 + r].alpha;
      const int dy = ytab[j0 + r].di;
      const float* buf = &rowSums[static_cast<size_t>(r) * width];
      const bool nextRow = dy != prevDy;
      if (nextRow) {
        WriteRow(sum.data(), width, dst.ptr<uchar>(prevDy));
        prevDy = dy;
      }
      Accumulate(buf, beta, width, sum.data(), nextRow);
    }
  }
  WriteRow(sum.data(), width, dst.ptr<uchar>(prevDy));
}
#endif

}  // namespace

void ResizeArea(const cv::Mat& src, cv::Mat& dst, cv::Size size) {
#if defined(__SSE2__)
  // cv::resize's own choice of path: scales from the sizes as doubles; whole-number shrinks take its fast path.
  const double scaleX = 1. / (static_cast<double>(size.width) / src.cols);
  const double scaleY = 1. / (static_cast<double>(size.height) / src.rows);
  const bool whole = std::abs(scaleX - cv::saturate_cast<int>(scaleX)) < DBL_EPSILON &&
                     std::abs(scaleY - cv::saturate_cast<int>(scaleY)) < DBL_EPSILON;
  if (src.type() == CV_8UC3 && !src.empty() && size.width > 0 && size.height > 0 && scaleX >= 1 && scaleY >= 1 &&
      !whole && dst.data != src.data) {
    dst.create(size, CV_8UC3);
    ResizeArea8UC3(src, dst, scaleX, scaleY);
    return;
  }
#endif
  cv::resize(src, dst, size, 0, 0, cv::INTER_AREA);
}

}  // namespace edgecv
