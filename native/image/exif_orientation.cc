#include "image/exif_orientation.h"

namespace edgecv {

int TiffOrientation(const uint8_t* tiff, size_t n) {
  if (tiff == nullptr || n < 8) return 1;
  const bool little = tiff[0] == 'I' && tiff[1] == 'I';
  if (!little && !(tiff[0] == 'M' && tiff[1] == 'M')) return 1;
  auto u16 = [&](size_t at) -> unsigned {
    return little ? tiff[at] | tiff[at + 1] << 8 : tiff[at] << 8 | tiff[at + 1];
  };
  auto u32 = [&](size_t at) -> size_t {
    return little ? u16(at) | size_t{u16(at + 2)} << 16 : size_t{u16(at)} << 16 | u16(at + 2);
  };
  const size_t ifd = u32(4);
  if (ifd + 2 > n) return 1;
  const unsigned entries = u16(ifd);
  for (unsigned i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + 12 * size_t{i};
    if (e + 12 > n) return 1;
    if (u16(e) == 0x0112) {
      const unsigned v = u16(e + 8);
      return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
    }
  }
  return 1;
}

void ApplyOrientation(cv::Mat& img, int orientation) {
  switch (orientation) {
    case 2:
      cv::flip(img, img, 1);
      break;
    case 3:
      cv::flip(img, img, -1);
      break;
    case 4:
      cv::flip(img, img, 0);
      break;
    case 5:
      cv::transpose(img, img);
      break;
    case 6:
      cv::transpose(img, img);
      cv::flip(img, img, 1);
      break;
    case 7:
      cv::transpose(img, img);
      cv::flip(img, img, -1);
      break;
    case 8:
      cv::transpose(img, img);
      cv::flip(img, img, 0);
      break;
    default:
      break;
  }
}

}  // namespace edgecv
