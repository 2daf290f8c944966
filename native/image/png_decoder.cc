#include "image/png_decoder.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <png.h>

#include "image/exif_orientation.h"
#include "runtime/error_code.h"
#include "runtime/recycled_buffers.h"

namespace edgecv {
namespace {

// The read struct, its two info structs and the input, destroyed on every path. libpng reports fatal errors
// through OnFatal, which longjmps back to the setjmp in ReadHeader/ReadPixels: those hold only plain data, so
// the jump skips no destructor.
struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  png_infop endInfo = nullptr;  // chunks after the image data (an eXIf may be there)
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
  int warnings = 0;
  char message[160] = "libpng could not start";

  PngReader(const uint8_t* bytes, size_t length);
  ~PngReader() { png_destroy_read_struct(&png, &info, &endInfo); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;
};

PngReader& ReaderOf(png_structp png) { return *static_cast<PngReader*>(png_get_error_ptr(png)); }

[[noreturn]] void OnFatal(png_structp png, png_const_charp message) {
  PngReader& r = ReaderOf(png);
  std::snprintf(r.message, sizeof r.message, "%s", message);
  png_longjmp(png, 1);
}

void OnWarning(png_structp png, png_const_charp) { ++ReaderOf(png).warnings; }

// Reads from the caller's bytes; running past their end is fatal (OpenCV's buffer reader does the same).
void ReadInput(png_structp png, png_bytep out, size_t length) {
  PngReader& r = *static_cast<PngReader*>(png_get_io_ptr(png));
  if (length > r.size - r.pos) png_error(png, "truncated (the file ends inside a chunk)");
  std::memcpy(out, r.data + r.pos, length);
  r.pos += length;
}

PngReader::PngReader(const uint8_t* bytes, size_t length) : data(bytes), size(length) {
  png = png_create_read_struct(PNG_LIBPNG_VER_STRING, this, OnFatal, OnWarning);
  if (png == nullptr) return;
  info = png_create_info_struct(png);
  endInfo = png_create_info_struct(png);
  png_set_read_fn(png, this, ReadInput);
}

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int bitDepth = 0, colorType = 0;
};

bool ReadHeader(PngReader& r, PngHeader& h) {
  if (r.png == nullptr || r.info == nullptr || r.endInfo == nullptr) return false;
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_info(r.png, r.info);
  png_get_IHDR(r.png, r.info, &h.width, &h.height, &h.bitDepth, &h.colorType, nullptr, nullptr, nullptr);
  return true;
}

// OpenCV 4.6's PngDecoder::readData for a 3-channel 8-bit destination, call for call.
bool ReadPixels(PngReader& r, const PngHeader& h, png_bytepp rows) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  if (h.bitDepth == 16) png_set_strip_16(r.png);
  png_set_strip_alpha(r.png);  // alpha (and tRNS, which palette expansion turns into alpha) dropped, not composited
  if (h.colorType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r.png);
  const bool colour = (h.colorType & PNG_COLOR_MASK_COLOR) != 0;
  if (!colour && h.bitDepth < 8) png_set_expand_gray_1_2_4_to_8(r.png);
  if (colour) {
    png_set_bgr(r.png);
  } else {
    png_set_gray_to_rgb(r.png);
  }
  png_set_interlace_handling(r.png);
  png_read_update_info(r.png, r.info);
  png_read_image(r.png, rows);
  png_read_end(r.png, r.endInfo);
  return true;
}

// The eXIf chunk before the image data, else after it (the spec allows both), as OpenCV looks for it.
int PngOrientation(const PngReader& r) {
  png_uint_32 length = 0;
  png_bytep exif = nullptr;
  if (png_get_valid(r.png, r.info, PNG_INFO_eXIf) != 0) {
    png_get_eXIf_1(r.png, r.info, &length, &exif);
  } else if (png_get_valid(r.png, r.endInfo, PNG_INFO_eXIf) != 0) {
    png_get_eXIf_1(r.png, r.endInfo, &length, &exif);
  }
  return TiffOrientation(exif, length);
}

[[noreturn]] void Refuse(const std::string& why) {
  throw JobError(ErrorCode::kInvalidImage, "image could not be decoded: " + why);
}

// Whether every chunk up to IEND fits in the file. libpng allocates a chunk's buffer from its declared length before
// reading it: a 72-byte PNG claiming a 1 GB eXIf chunk cost a 1 GB allocation (npm run fuzz:native). The decode
// reads every chunk to IEND, so a chunk that does not fit is refused anyway, here before anything is allocated.
bool ChunksFit(const uint8_t* data, size_t size) {
  size_t at = 8;  // after the signature
  while (size - at >= 12) {
    const size_t length =
        (size_t{data[at]} << 24) | (size_t{data[at + 1]} << 16) | (size_t{data[at + 2]} << 8) | data[at + 3];
    if (length > size - at - 12) return false;  // its type, data and CRC
    if (std::memcmp(data + at + 4, "IEND", 4) == 0) return true;
    at += 12 + length;
  }
  return true;  // no IEND: libpng says what is missing
}

}  // namespace

bool LooksLikePng(const uint8_t* data, size_t size) { return size >= 8 && png_sig_cmp(data, 0, 8) == 0; }

cv::Mat DecodePngBgr(const uint8_t* data, size_t size, int* warnings, uint64_t maxPixels) {
  if (size >= 8 && !ChunksFit(data, size)) Refuse("invalid PNG: truncated (a chunk is longer than the file holds)");
  PngReader r(data, size);
  PngHeader h;
  if (!ReadHeader(r, h)) Refuse(std::string("invalid PNG: ") + r.message);
  if (uint64_t{h.width} * h.height > maxPixels) Refuse("over " + std::to_string(maxPixels) + " pixels");
  // From the recycler: a camera's frames are one size (runtime/recycled_buffers.h).
  cv::Mat bgr = RecyclingMat();
  bgr.create(static_cast<int>(h.height), static_cast<int>(h.width), CV_8UC3);
  std::vector<png_bytep> rows(h.height);
  for (png_uint_32 y = 0; y < h.height; ++y) rows[y] = bgr.ptr<uint8_t>(static_cast<int>(y));
  if (!ReadPixels(r, h, rows.data())) Refuse(std::string("invalid PNG: ") + r.message);
  if (warnings != nullptr) *warnings = r.warnings;
  ApplyOrientation(bgr, PngOrientation(r));
  return bgr;
}

}  // namespace edgecv
