// embedFace(): decode, detect, pick the first face, embed it, and optionally
// keep a crop for the store and search a gallery snapshot, all on one worker.
//
// "First" face = highest detection score (ties: leftmost, then topmost), so the
// choice does not depend on the detector's internal order.
#pragma once

#include <napi.h>

#include <memory>
#include <optional>
#include <vector>

#include "models/face_detector.h"
#include "models/face_embedder.h"
#include "gallery/gallery_index.h"
#include "image/photo_pixels.h"
#include "jobs/image_job.h"

namespace edgecv {

struct FaceEmbedRequest {
  DetectOptions detect;
  bool useRect = false;  // true: embed `rect` as given, no detection
  PixelRect rect{};
  bool hasKeypoints = false;  // with useRect: align by `keypoints` (without: the detector's, on the face at `rect`)
  FaceKeypoints keypoints{};
  double cropScale = 0;                            // side of the square crop / longer side of the face box (> 0)
  bool align = true;                               // false: the plain box crop (bench and calibration compare the two)
  bool rotatedPasses = true;                       // search a photo with no face again turned by +-kRotatedPassDegrees
  bool keepCrop = false;                           // also return a JPEG crop (for re-embedding later)
  std::shared_ptr<const GallerySnapshot> gallery;  // search it when set
};

// The crop kept with an enrolled sample: a square twice the face box, so any
// embedding margin up to 2 can be cut from it again, at most kMaxSide pixels.
struct StoredCrop {
  static constexpr double kScale = 2.0;
  static constexpr int kMaxSide = 448;
  static constexpr int kJpegQuality = 92;
  std::vector<uchar> jpeg;
  PixelRect face{};  // the face box in crop pixels
};

class FaceEmbedJob : public ImageJob {
 public:
  // JS thread. `bytes` is pinned, not copied.
  FaceEmbedJob(Napi::Env env, Napi::Uint8Array bytes, FaceEmbedRequest request);

  void Execute(WorkerContext& ctx) override;
  Napi::Value Result(Napi::Env env) override;

 private:
  // The full-range detector scores a face that fills the whole photo (a tight
  // face crop, as people often enrol) low: when the photo gives no face, it is
  // searched again inside a black border of this fraction of its longer side.
  static constexpr double kTightCropPadding = 0.25;
  // Longest side of that padded image; larger photos are shrunk before padding (same detector input).
  static constexpr double kPaddedPassMaxSide = 1536;
  static std::vector<Face> DetectInPadded(FaceDetector& detector, const cv::Mat& bgr, const DetectOptions& options,
                                          StageTimings* timings);
  // The detector finds faces up to about this far from upright: a photo with none is searched again turned this
  // far each way, so faces up to twice as far are found (pipelines/rotated_face_pass.h).
  static constexpr double kRotatedPassDegrees = 45;
  // A face tilted more than kUprightWithinDegrees (by its landmarks) is looked at again turned upright, at most this
  // many times, for truer landmarks (pipelines/rotated_face_pass.h).
  static constexpr int kUprightRounds = 2;
  // A face whose landmarks are looked up for a given rect: the detected face overlapping it at least this much.
  static constexpr float kLandmarkMinIou = 0.3f;
  // Every face of the photo, best first: the whole-image pass on `view` (the photo as detectFaces decodes it, maybe
  // smaller), then (none found) the padded and the turned passes on the whole photo.
  std::vector<Face> FindFaces(WorkerContext& ctx, const cv::Mat& view, PhotoPixels& photo);
  // By score, ties leftmost then topmost: the order does not depend on the detector's.
  static std::vector<Face> SortedByScore(std::vector<Face> faces);
  // The landmarks of the detected face that best overlaps `rect`; false when none does.
  bool LandmarksAt(WorkerContext& ctx, const cv::Mat& view, PhotoPixels& photo, const PixelRect& rect,
                   FaceKeypoints* out);
  // The pixels of the photo that the crops around a face at `box` read (may reach past the photo), while the upright
  // look keeps its box and the tilt it gives.
  cv::Rect CropsRead(const PixelRect& box) const;
  static cv::Rect StoredCropReads(const PixelRect& face);
  // What share of the photo's pixels is decoded at its own size so far.
  double DecodedShare(const PhotoPixels& photo) const;
  static StoredCrop MakeStoredCrop(const cv::Mat& bgr, const PixelRect& face);

  FaceEmbedRequest request_;

  std::vector<Face> faces_;
  bool embedded_ = false;
  PixelRect chosen_{};
  float chosenScore_ = 0;
  bool aligned_ = false;
  FaceKeypoints chosenKeypoints_{};
  std::optional<double> rotation_;  // the face's tilt by its landmarks (none: not aligned)
  double sharpness_ = 0;            // of the embedded face's box (native/models/face_sharpness.h)
  std::vector<float> embedding_;
  StoredCrop crop_;
  GalleryMatch match_;
  double searchMs_ = 0;
  double decodedShare_ = 0;  // of the photo's pixels, decoded at its own size (timings.decodedShare)
  StageTimings detectTimings_;
  StageTimings embedTimings_;  // its postprocessing (normalization) is not reported
};

}  // namespace edgecv
