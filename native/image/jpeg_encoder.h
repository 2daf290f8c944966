// JPEG encoding through libjpeg(-turbo) directly instead of cv::imencode (the addon needs no OpenCV imgcodecs:
// image/png_decoder.h says why). The settings are cv::imencode's defaults in OpenCV 4.6 (baseline, 4:2:0, no
// Huffman optimisation, no restart markers, JFIF header), so the bytes are the ones it writes.
#pragma once

#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

namespace edgecv {

// cv::imencode's default quality.
constexpr int kDefaultJpegQuality = 95;

// An 8-bit BGR (CV_8UC3) or grey (CV_8UC1) image as a baseline JPEG of that quality (1..100). Throws
// JobError(INTERNAL) for another pixel type, an empty image or an encoder failure.
std::vector<uint8_t> EncodeJpeg(const cv::Mat& image, int quality = kDefaultJpegQuality);

}  // namespace edgecv
