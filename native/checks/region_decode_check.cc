// Checks the partial JPEG decode (edgecv::DecodeJpegRegionBgr, image/jpeg_decoder.h) and the crops that rely on it
// (image/photo_pixels.h) against the whole decode, pixel for pixel. Built and run by test/region-decode.test.ts (not
// part of the addon).
//
//   region_decode_check [--crop-margin N] [--seed S] [photo.jpg ...]
//     JPEGs made here (every chroma subsampling libjpeg writes, grey, CMYK, restart markers, progressive, the eight
//     EXIF orientations, odd sizes) and the photos named, each decoded whole and in random regions. Every pixel of
//     the part decoded must equal the whole decode's, every other be black, and the part hold what was asked.
//     Then, on the photos, the crops recognition cuts around random faces (the box crop, the turned crop, the
//     sharpness, the upright look's cut), each from a PhotoPixels asked for what its Reads function names, against
//     the same crop of the whole decode. Prints one JSON line of counts and the first mismatches.
//   region_decode_check --png out.png photo.jpg [out2.png photo2.jpg ...]
//     Writes each whole decode as a PNG: the same pixels for the engine test to compare with.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <jpeglib.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "image/jpeg_decoder.h"
#include "image/photo_pixels.h"
#include "models/crop.h"
#include "models/face_alignment.h"
#include "models/face_sharpness.h"
#include "pipelines/rotated_face_pass.h"

namespace {

using Bytes = std::vector<uint8_t>;

struct Kind {
  const char* name;
  int components;    // 1 grey, 3 YCbCr, 4 CMYK
  int hSamp, vSamp;  // the luma's sampling factors
  int restart;       // restart interval in MCUs (0: none)
  bool progressive;
};

constexpr Kind kKinds[] = {
    {"444", 3, 1, 1, 0, false},  {"422", 3, 2, 1, 0, false},         {"420", 3, 2, 2, 0, false},
    {"440", 3, 1, 2, 0, false},  {"411", 3, 4, 1, 0, false},         {"grey", 1, 1, 1, 0, false},
    {"cmyk", 4, 1, 1, 0, false}, {"420-restart", 3, 2, 2, 3, false}, {"420-progressive", 3, 2, 2, 0, true},
};

// An APP1 "Exif" segment's body holding only the orientation tag (little-endian TIFF, one IFD entry).
Bytes ExifOrientation(int orientation) {
  Bytes b = {'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0};
  b.insert(b.end(), {static_cast<uint8_t>(orientation), 0, 0, 0, 0, 0, 0, 0});
  return b;
}

// A textured picture (smooth gradients, edges and noise: every frequency the chroma upsampling sees) as a JPEG.
Bytes MakeJpeg(const Kind& kind, int w, int h, int orientation, std::mt19937& rng) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = kind.components;
  c.in_color_space = kind.components == 1 ? JCS_GRAYSCALE : kind.components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 85, TRUE);
  if (kind.components == 3) {
    c.comp_info[0].h_samp_factor = kind.hSamp;
    c.comp_info[0].v_samp_factor = kind.vSamp;
  }
  c.restart_interval = static_cast<unsigned>(kind.restart);
  if (kind.progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  if (orientation != 1) {
    const Bytes exif = ExifOrientation(orientation);
    jpeg_write_marker(&c, JPEG_APP0 + 1, exif.data(), static_cast<unsigned>(exif.size()));
  }
  std::uniform_int_distribution<int> noise(0, 47);
  const int seed = noise(rng);
  std::vector<uint8_t> row(static_cast<size_t>(w) * kind.components);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int k = 0; k < kind.components; ++k) {
        const double wave = 90 * std::sin(x * 0.07 * (k + 1) + y * 0.05 + seed) + ((x / 9 + y / 7 + k) % 2) * 50;
        row[static_cast<size_t>(x) * kind.components + k] =
            static_cast<uint8_t>(std::clamp(128 + static_cast<int>(wave) + noise(rng) - 24, 0, 255));
      }
    }
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  Bytes bytes(out, out + size);
  std::free(out);
  jpeg_destroy_compress(&c);
  return bytes;
}

cv::Rect RandomRegion(cv::Size size, std::mt19937& rng) {
  // Some regions reach past the picture, as a crop's square around a face near its edge does.
  std::uniform_int_distribution<int> x(-size.width / 4, size.width - 1), y(-size.height / 4, size.height - 1);
  const int x0 = x(rng), y0 = y(rng);
  std::uniform_int_distribution<int> w(1, size.width - std::max(0, x0) + size.width / 4),
      h(1, size.height - std::max(0, y0) + size.height / 4);
  return {x0, y0, w(rng), h(rng)};
}

struct Tally {
  long cases = 0;
  long bad = 0;
  std::string first;  // the first few mismatches, as JSON strings
  void Fail(const std::string& what) {
    ++bad;
    if (bad <= 5) first += std::string(first.empty() ? "" : ",") + "\"" + what + "\"";
  }
};

bool Same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && (a.empty() || cv::norm(a, b, cv::NORM_INF) == 0);
}

// One region decode of `jpeg` against `whole`.
void CheckRegion(const Bytes& jpeg, const cv::Mat& whole, const cv::Rect& region, int margin, const std::string& what,
                 Tally& tally) {
  ++tally.cases;
  cv::Rect decoded;
  const cv::Mat part =
      edgecv::DecodeJpegRegionBgr(jpeg.data(), jpeg.size(), region, &decoded, edgecv::kMaxJpegPixels, margin);
  const cv::Rect inside = region & cv::Rect(0, 0, whole.cols, whole.rows);
  const auto at = [&] {
    return what + " region " + std::to_string(region.x) + "," + std::to_string(region.y) + " " +
           std::to_string(region.width) + "x" + std::to_string(region.height);
  };
  if (part.size() != whole.size() || (decoded & inside) != inside) return tally.Fail(at() + ": not decoded");
  if (!Same(part(decoded), whole(decoded))) return tally.Fail(at() + ": pixels differ");
  cv::Mat outside = part.clone();
  outside(decoded).setTo(cv::Scalar::all(0));
  if (cv::countNonZero(outside.reshape(1)) != 0) tally.Fail(at() + ": not black outside");
}

void CheckKinds(int margin, std::mt19937& rng, Tally& tally) {
  for (const Kind& kind : kKinds) {
    for (int orientation = 1; orientation <= 8; ++orientation) {
      for (int trial = 0; trial < 3; ++trial) {
        std::uniform_int_distribution<int> w(9, 420), h(7, 330);
        const Bytes jpeg = MakeJpeg(kind, w(rng), h(rng), orientation, rng);
        const cv::Mat whole = edgecv::DecodeJpegBgr(jpeg.data(), jpeg.size());
        const std::string what = std::string(kind.name) + " orientation " + std::to_string(orientation) + " " +
                                 std::to_string(whole.cols) + "x" + std::to_string(whole.rows);
        for (int r = 0; r < 12; ++r) CheckRegion(jpeg, whole, RandomRegion(whole.size(), rng), margin, what, tally);
      }
    }
  }
}

// A face box and landmarks at a random place, size and tilt on `size`: the template's points turned about the box.
void RandomFace(cv::Size size, std::mt19937& rng, edgecv::PixelRect* box, edgecv::FaceKeypoints* keypoints) {
  std::uniform_real_distribution<double> unit(0, 1);
  const double side = 20 + unit(rng) * 0.7 * std::min(size.width, size.height);
  const double cx = unit(rng) * size.width, cy = unit(rng) * size.height, tilt = (unit(rng) - 0.5) * 2 * 70;
  *box = {static_cast<int>(cx - side / 2), static_cast<int>(cy - side / 2), static_cast<int>(cx + side / 2),
          static_cast<int>(cy + side / 2)};
  // Eyes, nose, mouth and ears in the box's own frame (fractions of its side), as the detector orders them.
  const double points[6][2] = {{-0.18, -0.12}, {0.18, -0.12}, {0, 0.05}, {0, 0.22}, {-0.42, -0.02}, {0.42, -0.02}};
  const double c = std::cos(tilt * CV_PI / 180), s = std::sin(tilt * CV_PI / 180);
  for (int k = 0; k < 6; ++k) {
    const double x = points[k][0] * side, y = points[k][1] * side;
    (*keypoints)[2 * k] = static_cast<float>(cx + c * x + s * y);
    (*keypoints)[2 * k + 1] = static_cast<float>(cy - s * x + c * y);
  }
}

// The crops of recognition around random faces, each from a PhotoPixels asked for its Reads, against the whole's.
void CheckCrops(const Bytes& jpeg, const cv::Mat& whole, const std::string& what, std::mt19937& rng, Tally& tally) {
  constexpr int kSide = 224;       // the embedder's input
  constexpr double kScale = 1.45;  // about the embedders' crop scale
  for (int trial = 0; trial < 40; ++trial) {
    edgecv::PixelRect box;
    edgecv::FaceKeypoints keypoints;
    RandomFace(whole.size(), rng, &box, &keypoints);
    // A fresh PhotoPixels a crop, so each is checked on a decode of its own Reads alone.
    const auto photo = [&] {
      return edgecv::PhotoPixels(
          [&](const cv::Rect& region, cv::Rect* decoded) {
            return edgecv::DecodeJpegRegionBgr(jpeg.data(), jpeg.size(), region, decoded);
          },
          cv::Mat());
    };
    const std::string face = what + " face " + std::to_string(box[0]) + "," + std::to_string(box[1]) + "-" +
                             std::to_string(box[2]) + "," + std::to_string(box[3]);
    if (const auto toCrop = edgecv::UprightBoxTransform(keypoints, box, kScale, kSide)) {
      ++tally.cases;
      cv::Mat a, b;
      edgecv::AlignedCrop(whole, *toCrop, kSide, a);
      edgecv::AlignedCrop(photo().Covering(edgecv::AlignedCropReads(*toCrop, kSide)), *toCrop, kSide, b);
      if (!Same(a, b)) tally.Fail(face + ": turned crop differs");
    }
    for (const double scale : {kScale, edgecv::kUprightLookScale}) {
      ++tally.cases;
      const cv::Rect square = edgecv::SquareAround(box, scale);
      const cv::Mat a = edgecv::CutPadded(whole, square).clone();
      const cv::Mat b = edgecv::CutPadded(photo().Covering(square), square).clone();
      if (!Same(a, b)) tally.Fail(face + ": box crop differs");
    }
    ++tally.cases;
    edgecv::PhotoPixels forLook = photo();
    const cv::Mat& look = forLook.Covering(edgecv::UprightLandmarksReads(box));
    if (!Same(edgecv::CutPadded(whole, edgecv::UprightLandmarksReads(box)),
              edgecv::CutPadded(look, edgecv::UprightLandmarksReads(box))))
      tally.Fail(face + ": upright look differs");
    ++tally.cases;
    if (edgecv::FaceSharpness(whole, box) != edgecv::FaceSharpness(photo().Covering(edgecv::ToRect(box)), box))
      tally.Fail(face + ": sharpness differs");
  }
  // Asked again past what it holds, a PhotoPixels decodes the union: every region asked so far stays right.
  edgecv::PhotoPixels growing(
      [&](const cv::Rect& region, cv::Rect* decoded) {
        return edgecv::DecodeJpegRegionBgr(jpeg.data(), jpeg.size(), region, decoded);
      },
      cv::Mat());
  std::vector<cv::Rect> asked;
  for (int k = 0; k < 6; ++k) {
    asked.push_back(RandomRegion(whole.size(), rng) & cv::Rect(0, 0, whole.cols, whole.rows));
    const cv::Mat& now = growing.Covering(asked.back());
    for (const cv::Rect& r : asked) {
      ++tally.cases;
      if (!Same(now(r), whole(r))) tally.Fail(what + ": a region asked earlier differs after a later ask");
    }
  }
}

Bytes ReadFile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  cv::setNumThreads(1);
  int margin = edgecv::kRegionCropMargin;
  unsigned seed = 1;
  std::vector<std::string> photos;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--png") {
      for (int k = i + 1; k + 1 < argc; k += 2) {
        const Bytes jpeg = ReadFile(argv[k + 1]);
        if (!cv::imwrite(argv[k], edgecv::DecodeJpegBgr(jpeg.data(), jpeg.size()))) return 1;
      }
      return 0;
    }
    if (arg == "--crop-margin" && i + 1 < argc) {
      margin = std::atoi(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = static_cast<unsigned>(std::atoi(argv[++i]));
    } else {
      photos.push_back(arg);
    }
  }
  std::mt19937 rng(seed);
  Tally regions, crops;
  CheckKinds(margin, rng, regions);
  for (const std::string& file : photos) {
    const Bytes jpeg = ReadFile(file);
    const cv::Mat whole = edgecv::DecodeJpegBgr(jpeg.data(), jpeg.size());
    for (int r = 0; r < 40; ++r) CheckRegion(jpeg, whole, RandomRegion(whole.size(), rng), margin, file, regions);
    CheckCrops(jpeg, whole, file, rng, crops);
  }
  std::printf(
      "{\"regions\":%ld,\"regionMismatches\":%ld,\"crops\":%ld,\"cropMismatches\":%ld,\"photos\":%zu,"
      "\"first\":[%s%s%s]}\n",
      regions.cases, regions.bad, crops.cases, crops.bad, photos.size(), regions.first.c_str(),
      regions.first.empty() || crops.first.empty() ? "" : ",", crops.first.c_str());
  return 0;
}
