#include "image/jpeg_encoder.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <jpeglib.h>

#include "image/libjpeg_errors.h"

#include "runtime/error_code.h"

namespace edgecv {
namespace {

// The compressor, its error manager and the output libjpeg's memory destination mallocs, freed on every path.
struct Compressor {
  jpeg_compress_struct cinfo{};
  LibjpegErrors err{};
  unsigned char* out = nullptr;
  unsigned long outSize = 0;
  Compressor() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = OnLibjpegFatal;
    jpeg_create_compress(&cinfo);
  }
  ~Compressor() {
    jpeg_destroy_compress(&cinfo);
    std::free(out);
  }
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
};

bool Compress(Compressor& c, const cv::Mat& image, int quality) {
  if (setjmp(c.err.jump)) return false;
  jpeg_mem_dest(&c.cinfo, &c.out, &c.outSize);
  c.cinfo.image_width = static_cast<JDIMENSION>(image.cols);
  c.cinfo.image_height = static_cast<JDIMENSION>(image.rows);
  c.cinfo.input_components = image.channels();
  c.cinfo.in_color_space = image.channels() == 3 ? JCS_EXT_BGR : JCS_GRAYSCALE;  // libjpeg-turbo reads BGR itself
  jpeg_set_defaults(&c.cinfo);
  jpeg_set_quality(&c.cinfo, quality, TRUE);
  jpeg_start_compress(&c.cinfo, TRUE);
  while (c.cinfo.next_scanline < c.cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image.ptr<uint8_t>(static_cast<int>(c.cinfo.next_scanline)));
    jpeg_write_scanlines(&c.cinfo, &row, 1);
  }
  jpeg_finish_compress(&c.cinfo);
  return true;
}

}  // namespace

std::vector<uint8_t> EncodeJpeg(const cv::Mat& image, int quality) {
  if (image.empty() || (image.type() != CV_8UC3 && image.type() != CV_8UC1)) {
    throw JobError(ErrorCode::kInternal, "JPEG encoding takes a non-empty 8-bit BGR or grey image");
  }
  Compressor c;
  if (!Compress(c, image, quality))
    throw JobError(ErrorCode::kInternal, std::string("JPEG encoding failed: ") + c.err.message);
  return std::vector<uint8_t>(c.out, c.out + c.outSize);
}

}  // namespace edgecv
