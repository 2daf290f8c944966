#include "image/jpeg_decoder.h"

#include <algorithm>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>

#include <jpeglib.h>

#include "image/libjpeg_errors.h"

#include <opencv2/core.hpp>

#include "image/exif_orientation.h"
#include "runtime/error_code.h"
#include "runtime/recycled_buffers.h"

namespace edgecv {
namespace {

void Silent(j_common_ptr) {}  // warnings: libjpeg still counts them in num_warnings

// The decompressor and its error manager, destroyed on every path.
struct Decompressor {
  jpeg_decompress_struct cinfo{};
  LibjpegErrors err{};
  int orientation = 1;  // EXIF, read with the header: jpeg_finish_decompress frees the saved markers
  Decompressor() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = OnLibjpegFatal;
    err.pub.output_message = Silent;
    jpeg_create_decompress(&cinfo);
  }
  ~Decompressor() { jpeg_destroy_decompress(&cinfo); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
};

int ExifOrientation(const jpeg_decompress_struct& cinfo);

// The largest of libjpeg's DCT scalings 1/8, 1/4, 1/2 that keeps the longer side at least minLongerSide (1: none).
unsigned ScaleDenominator(const jpeg_decompress_struct& cinfo, int minLongerSide) {
  if (minLongerSide <= 0) return 1;
  const unsigned longer = std::max(cinfo.image_width, cinfo.image_height);
  for (unsigned denom = 8; denom > 1; denom /= 2) {
    if ((longer + denom - 1) / denom >= static_cast<unsigned>(minLongerSide)) return denom;  // libjpeg rounds up
  }
  return 1;
}

bool ReadHeader(Decompressor& d, const uint8_t* data, size_t size, int minLongerSide) {
  if (setjmp(d.err.jump)) return false;
  jpeg_mem_src(&d.cinfo, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&d.cinfo, JPEG_APP0 + 1, 0xFFFF);  // APP1: EXIF, for the orientation
  jpeg_read_header(&d.cinfo, TRUE);
  d.orientation = ExifOrientation(d.cinfo);
  d.cinfo.scale_num = 1;
  d.cinfo.scale_denom = ScaleDenominator(d.cinfo, minLongerSide);
  // libjpeg-turbo converts grey and YCbCr straight to BGR; CMYK and YCCK come out as (Adobe-inverted) CMYK.
  const bool cmyk = d.cinfo.jpeg_color_space == JCS_CMYK || d.cinfo.jpeg_color_space == JCS_YCCK;
  d.cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_EXT_BGR;
  jpeg_start_decompress(&d.cinfo);
  return true;
}

bool ReadPixels(Decompressor& d, uint8_t* pixels, size_t stride) {
  if (setjmp(d.err.jump)) return false;
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    JSAMPROW row = pixels + d.cinfo.output_scanline * stride;
    jpeg_read_scanlines(&d.cinfo, &row, 1);
  }
  jpeg_finish_decompress(&d.cinfo);
  return true;
}

// The decoder's output at its size and channels, from the recycler: a camera's frames are one size
// (runtime/recycled_buffers.h).
cv::Mat OutputMat(const Decompressor& d) {
  const int channels = d.cinfo.out_color_space == JCS_CMYK ? 4 : 3;
  cv::Mat pixels = RecyclingMat();
  pixels.create(static_cast<int>(d.cinfo.output_height), static_cast<int>(d.cinfo.output_width), CV_8UC(channels));
  return pixels;
}

// Adobe writes CMYK inverted (0 = full ink); the same conversion cv::imdecode applies.
cv::Mat CmykToBgr(const cv::Mat& cmyk) {
  cv::Mat bgr(cmyk.rows, cmyk.cols, CV_8UC3);
  for (int y = 0; y < cmyk.rows; ++y) {
    const uint8_t* in = cmyk.ptr<uint8_t>(y);
    uint8_t* out = bgr.ptr<uint8_t>(y);
    for (int x = 0; x < cmyk.cols; ++x, in += 4, out += 3) {
      const int k = in[3];
      out[2] = static_cast<uint8_t>(k - ((255 - in[0]) * k >> 8));
      out[1] = static_cast<uint8_t>(k - ((255 - in[1]) * k >> 8));
      out[0] = static_cast<uint8_t>(k - ((255 - in[2]) * k >> 8));
    }
  }
  return bgr;
}

// The decoder's output as BGR, stood the way the camera saw it.
cv::Mat Oriented(const Decompressor& d, const cv::Mat& pixels) {
  cv::Mat bgr = pixels.channels() == 4 ? CmykToBgr(pixels) : pixels;
  ApplyOrientation(bgr, d.orientation);
  return bgr;
}

// The EXIF orientation tag (1..8) of the first APP1 "Exif" segment, 1 when there is none or it is unreadable.
int ExifOrientation(const jpeg_decompress_struct& cinfo) {
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m != nullptr; m = m->next) {
    if (m->marker != JPEG_APP0 + 1 || m->data_length < 14 || std::memcmp(m->data, "Exif\0\0", 6) != 0) continue;
    return TiffOrientation(m->data + 6, m->data_length - 6);
  }
  return 1;
}

// `r` (in the oriented picture's pixels) in the stored picture's (w x h) pixels: ApplyOrientation undone.
cv::Rect StoredRect(const cv::Rect& r, int orientation, int w, int h) {
  const auto stored = [&](int x, int y) {
    switch (orientation) {
      case 2:
        return cv::Point(w - 1 - x, y);
      case 3:
        return cv::Point(w - 1 - x, h - 1 - y);
      case 4:
        return cv::Point(x, h - 1 - y);
      case 5:
        return cv::Point(y, x);
      case 6:
        return cv::Point(y, h - 1 - x);
      case 7:
        return cv::Point(w - 1 - y, h - 1 - x);
      case 8:
        return cv::Point(w - 1 - y, x);
      default:
        return cv::Point(x, y);
    }
  };
  const cv::Point a = stored(r.x, r.y), b = stored(r.x + r.width - 1, r.y + r.height - 1);
  return {std::min(a.x, b.x), std::min(a.y, b.y), std::abs(a.x - b.x) + 1, std::abs(a.y - b.y) + 1};
}

// Decodes rows [region.y, region.br().y) of the stored picture, and of them at least columns [region.x,
// region.br().x), into `pixels` (the stored size); every other pixel is set to 0.
bool ReadRegion(Decompressor& d, const cv::Rect& region, int cropMargin, cv::Mat& pixels) {
  if (setjmp(d.err.jump)) return false;
  if (region.empty()) {
    pixels.setTo(cv::Scalar::all(0));
    jpeg_abort_decompress(&d.cinfo);
    return true;
  }
  const int w = static_cast<int>(d.cinfo.output_width);
  const size_t pixel = pixels.elemSize();
  // libjpeg-turbo computes a cropped decode's edge columns as the picture's own edges (its fancy upsampling
  // replicates the last chroma sample there), so they differ from a whole decode's: the crop reaches cropMargin
  // further each way, and its edge columns are never ones the caller asked for. Rows skipped are exact.
  JDIMENSION x = static_cast<JDIMENSION>(std::max(0, region.x - cropMargin));
  JDIMENSION width = static_cast<JDIMENSION>(std::min(w, region.br().x + cropMargin)) - x;
  if (width < static_cast<JDIMENSION>(w)) jpeg_crop_scanline(&d.cinfo, &x, &width);
  if (region.y > 0) jpeg_skip_scanlines(&d.cinfo, static_cast<JDIMENSION>(region.y));
  std::memset(pixels.data, 0, static_cast<size_t>(region.y) * pixels.step);
  while (static_cast<int>(d.cinfo.output_scanline) < region.br().y) {
    uint8_t* row = pixels.ptr<uint8_t>(static_cast<int>(d.cinfo.output_scanline));
    JSAMPROW out = row + x * pixel;
    jpeg_read_scanlines(&d.cinfo, &out, 1);
    std::memset(row, 0, region.x * pixel);  // the crop's margin too
    std::memset(row + region.br().x * pixel, 0, (w - region.br().x) * pixel);
  }
  uint8_t* below = pixels.ptr<uint8_t>(region.br().y);
  std::memset(below, 0, static_cast<size_t>(pixels.rows - region.br().y) * pixels.step);
  jpeg_abort_decompress(&d.cinfo);  // the rows below are never read
  return true;
}

[[noreturn]] void ThrowUndecodable(const Decompressor& d) {
  throw JobError(ErrorCode::kInvalidImage, std::string("image could not be decoded: ") + d.err.message);
}

void CheckPixels(const Decompressor& d, uint64_t maxPixels) {
  if (static_cast<uint64_t>(d.cinfo.image_width) * d.cinfo.image_height > maxPixels) {
    throw JobError(ErrorCode::kInvalidImage,
                   "image could not be decoded: over " + std::to_string(maxPixels) + " pixels");
  }
}

}  // namespace

bool LooksLikeJpeg(const uint8_t* data, size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

bool IsProgressiveJpeg(const uint8_t* data, size_t size) {
  if (!LooksLikeJpeg(data, size)) return false;
  size_t at = 2;
  while (at + 4 <= size) {
    if (data[at] != 0xFF) return false;  // not a marker: libjpeg will say what is wrong
    const uint8_t marker = data[at + 1];
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return false;  // EOI or a scan before any frame header
    const bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) return marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE;
    at += 2 + ((static_cast<size_t>(data[at + 2]) << 8) | data[at + 3]);  // the segment's length
  }
  return false;
}

cv::Mat DecodeJpegBgr(const uint8_t* data, size_t size, int* warnings, uint64_t maxPixels, int minLongerSide,
                      cv::Size* fullSize) {
  Decompressor d;
  if (!ReadHeader(d, data, size, minLongerSide)) ThrowUndecodable(d);
  if (fullSize != nullptr) {
    const int w = static_cast<int>(d.cinfo.image_width), h = static_cast<int>(d.cinfo.image_height);
    *fullSize = d.orientation >= 5 ? cv::Size(h, w) : cv::Size(w, h);  // 5-8 transpose
  }
  CheckPixels(d, maxPixels);
  cv::Mat pixels = OutputMat(d);
  if (!ReadPixels(d, pixels.data, pixels.step)) ThrowUndecodable(d);
  if (warnings != nullptr) *warnings = static_cast<int>(d.err.pub.num_warnings);
  return Oriented(d, pixels);
}

cv::Mat DecodeJpegRegionBgr(const uint8_t* data, size_t size, const cv::Rect& region, cv::Rect* decoded,
                            uint64_t maxPixels, int cropMargin) {
  Decompressor d;
  if (!ReadHeader(d, data, size, 0)) ThrowUndecodable(d);
  CheckPixels(d, maxPixels);
  const int w = static_cast<int>(d.cinfo.image_width), h = static_cast<int>(d.cinfo.image_height);
  const cv::Size oriented = d.orientation >= 5 ? cv::Size(h, w) : cv::Size(w, h);
  const cv::Rect wanted = region & cv::Rect(cv::Point(0, 0), oriented);
  cv::Mat pixels = OutputMat(d);
  const cv::Rect stored = wanted.empty() ? cv::Rect() : StoredRect(wanted, d.orientation, w, h);
  if (!ReadRegion(d, stored, cropMargin, pixels)) ThrowUndecodable(d);
  if (decoded != nullptr) *decoded = wanted;
  return Oriented(d, pixels);
}

}  // namespace edgecv
