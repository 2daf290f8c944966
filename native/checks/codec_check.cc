// Compares the addon's own codecs with OpenCV's imgcodecs, the reference they replace: for each file named on the
// command line, edgecv::DecodeBgr against cv::imdecode(IMREAD_COLOR) pixel for pixel, and edgecv::EncodeJpeg
// against cv::imencode(".jpg") byte for byte at the stored crops' quality. Prints one JSON line per file, with
// the decoded pixels (BGR, hex) for images up to 4096 pixels. Built and run by test/png-decoding.test.ts (not part
// of the addon).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "image/image.h"
#include "image/jpeg_encoder.h"
#include "runtime/error_code.h"

namespace {

constexpr int kCropQuality = 92;  // StoredCrop::kJpegQuality (jobs/face_embed_job.h)
constexpr int kMaxPixelsShown = 4096;

std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c >= 0x20 && c < 0x7f) || c == '"' || c == '\\' ? c : '?';
  }
  return out + "\"";
}

std::string Hex(const cv::Mat& bgr) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (int y = 0; y < bgr.rows; ++y) {
    const uint8_t* row = bgr.ptr<uint8_t>(y);
    for (size_t i = 0; i < static_cast<size_t>(bgr.cols) * 3; ++i) {
      out += digits[row[i] >> 4];
      out += digits[row[i] & 15];
    }
  }
  return out;
}

// One file: {"file","reference":[w,h]|null,"decoded":[w,h]|null,"error","samePixels","sameJpeg","pixels"}.
std::string Check(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const cv::Mat reference = cv::imdecode(
      cv::Mat(1, static_cast<int>(bytes.size()), CV_8U, const_cast<uint8_t*>(bytes.data())), cv::IMREAD_COLOR);
  std::string json = "{\"file\":" + Quoted(file) + ",\"reference\":";
  json +=
      reference.empty() ? "null" : "[" + std::to_string(reference.cols) + "," + std::to_string(reference.rows) + "]";
  cv::Mat decoded;
  try {
    decoded = edgecv::DecodeBgr(bytes.data(), bytes.size());
  } catch (const edgecv::JobError& e) {
    return json + ",\"decoded\":null,\"error\":" + Quoted(e.what()) + "}";
  }
  json += ",\"decoded\":[" + std::to_string(decoded.cols) + "," + std::to_string(decoded.rows) + "]";
  const bool samePixels =
      !reference.empty() && reference.size() == decoded.size() && cv::norm(reference, decoded, cv::NORM_INF) == 0;
  std::vector<uint8_t> ours = edgecv::EncodeJpeg(decoded, kCropQuality), theirs;
  cv::imencode(".jpg", decoded, theirs, {cv::IMWRITE_JPEG_QUALITY, kCropQuality});
  json += std::string(",\"samePixels\":") + (samePixels ? "true" : "false");
  json += std::string(",\"sameJpeg\":") + (ours == theirs ? "true" : "false");
  if (decoded.total() <= kMaxPixelsShown) json += ",\"pixels\":\"" + Hex(decoded) + "\"";
  return json + "}";
}

}  // namespace

int main(int argc, char** argv) {
  cv::setNumThreads(1);
  for (int i = 1; i < argc; ++i) std::printf("%s\n", Check(argv[i]).c_str());
  return 0;
}
