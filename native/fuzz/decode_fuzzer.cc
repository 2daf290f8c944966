// libFuzzer target for the native decode path: the bytes a client sends go through DecodeBgr (libjpeg for
// JPEG, libpng for PNG, nothing else) and the letterbox every scene model applies. The addon's decoders replace
// cv::imdecode, which is the reference here: a JPEG libjpeg decodes without a warning, and every PNG, must come out
// of cv::imdecode(IMREAD_COLOR) pixel for pixel the same, and a PNG one refuses the other must refuse too (the same
// libpng, the same transforms). With damaged JPEG data they may differ: at a premature end, libjpeg's memory source
// goes on as if the file ended there (the rest comes out flat grey), while OpenCV's source suspends and leaves the
// undecoded rows black. Built and run by scripts/dev/fuzz-native.mjs with
// clang's -fsanitize=fuzzer,address,undefined; a crash, a sanitizer report, a hang or an allocation over
// the limit is a finding. Expected failures (JobError: not an image) are not. A JPEG is also decoded in part, as
// recognition's crops decode it, and must match its whole decode there.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "image/image.h"
#include "image/jpeg_decoder.h"
#include "image/png_decoder.h"
#include "models/letterbox.h"
#include "runtime/error_code.h"

namespace {
// The server refuses images over 40 megapixels from their header before decoding (src/engine/image-admission.ts);
// the same cap here keeps the fuzzer on decoding, not on allocating giant buffers.
constexpr uint64_t kServerMaxPixels = 40'000'000;

cv::Mat Reference(const uint8_t* data, size_t size) {
  return cv::imdecode(cv::Mat(1, static_cast<int>(size), CV_8U, const_cast<uint8_t*>(data)), cv::IMREAD_COLOR);
}

bool SamePixels(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && cv::norm(a, b, cv::NORM_INF) == 0;
}

// The addon's decoders, with the server's pixel cap; an empty Mat where they refuse the bytes, and why in `refusal`.
cv::Mat Decode(const uint8_t* data, size_t size, bool jpeg, bool png, int* warnings, std::string* refusal) {
  try {
    if (jpeg) return edgecv::DecodeJpegBgr(data, size, warnings, kServerMaxPixels);
    if (png) return edgecv::DecodePngBgr(data, size, warnings, kServerMaxPixels);
    return edgecv::DecodeBgr(data, size);
  } catch (const edgecv::JobError& e) {
    *refusal = e.what();
    return cv::Mat();  // refused as an image: the answer a client gets is a 400
  }
}

// The partial decode recognition's crops use (DecodeJpegRegionBgr): no crash whatever the bytes, and on a JPEG the
// whole decode takes without a warning, the whole decode's pixels in a region the input's size picks.
void CheckRegionDecode(const uint8_t* data, size_t size, const cv::Mat& whole, int warnings) {
  const int x = static_cast<int>(size % static_cast<size_t>(whole.cols)), y = static_cast<int>(size % whole.rows);
  const cv::Rect region(x - whole.cols / 8, y - whole.rows / 8, whole.cols / 3 + 1, whole.rows / 3 + 1);
  try {
    cv::Rect decoded;
    const cv::Mat part = edgecv::DecodeJpegRegionBgr(data, size, region, &decoded, kServerMaxPixels);
    if (part.size() != whole.size() || (decoded & region) != (region & cv::Rect(0, 0, whole.cols, whole.rows)))
      __builtin_trap();
    if (warnings == 0 && !SamePixels(part(decoded), whole(decoded))) __builtin_trap();
  } catch (const edgecv::JobError&) {
    if (warnings == 0) __builtin_trap();  // the whole decode took these bytes without a warning
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OPENCV_IO_MAX_IMAGE_PIXELS", std::to_string(kServerMaxPixels).c_str(), 1);  // OpenCV's decoders
  cv::setNumThreads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bool jpeg = edgecv::LooksLikeJpeg(data, size);
  const bool png = !jpeg && edgecv::LooksLikePng(data, size);
  int warnings = -1;
  std::string refusal;
  const cv::Mat image = Decode(data, size, jpeg, png, &warnings, &refusal);
  // A PNG refused for a chunk longer than the file is truncated, which imdecode refuses too, after allocating the
  // chunk's claimed length (up to 4 GB): it is not asked.
  const bool chunkPastEnd = refusal.find("longer than the file holds") != std::string::npos;
  if (png && !chunkPastEnd && image.empty() != Reference(data, size).empty()) __builtin_trap();  // one refuses only
  if (image.empty()) return 0;
  if (image.type() != CV_8UC3) __builtin_trap();  // the decoders promise 8-bit BGR
  if ((png || (jpeg && warnings == 0)) && !SamePixels(Reference(data, size), image)) __builtin_trap();
  if (jpeg) CheckRegionDecode(data, size, image, warnings);
  edgecv::ImageModelSpec spec;
  spec.inputSize = 64;
  spec.scale = 1.0 / 255;
  edgecv::LetterboxSource source;
  source.padValue = 114;
  cv::Mat blob;
  const edgecv::Letterbox box = edgecv::LetterboxBlob(image, spec, source, &blob);
  if (blob.total() != 3 * 64 * 64 || !(box.scaleX > 0) || !(box.scaleY > 0)) __builtin_trap();
  return 0;
}
