#include "jobs/face_embed_job.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <opencv2/imgproc.hpp>

#include "jobs/gallery_match_js.h"
#include "image/jpeg_encoder.h"
#include "jobs/js_values.h"
#include "jobs/detect_job.h"  // FaceToJs
#include "pipelines/rotated_face_pass.h"
#include "models/box.h"
#include "image/area_resize.h"
#include "models/face_sharpness.h"
#include "pool/worker_context.h"

namespace edgecv {

FaceEmbedJob::FaceEmbedJob(Napi::Env env, Napi::Uint8Array bytes, FaceEmbedRequest request)
    : ImageJob(env, bytes), request_(std::move(request)) {}

std::vector<Face> FaceEmbedJob::DetectInPadded(FaceDetector& detector, const cv::Mat& bgr, const DetectOptions& options,
                                               StageTimings* timings) {
  // The detector sees the padded image letterboxed to its small square input, so a padded copy larger than
  // kPaddedPassMaxSide only costs memory: shrink first (a 65500x1 image once became 98250x32751, 9.7 GB).
  const double paddedSide = (1 + 2 * kTightCropPadding) * std::max(bgr.cols, bgr.rows);
  const double shrink = std::min(1.0, kPaddedPassMaxSide / paddedSide);
  cv::Mat source = bgr;
  if (shrink < 1.0) {
    const cv::Size size(std::max(1, static_cast<int>(std::lround(bgr.cols * shrink))),
                        std::max(1, static_cast<int>(std::lround(bgr.rows * shrink))));
    ResizeArea(bgr, source, size);
  }
  const int pad = static_cast<int>(std::lround(kTightCropPadding * std::max(source.cols, source.rows)));
  cv::Mat padded;
  cv::copyMakeBorder(source, padded, pad, pad, pad, pad, cv::BORDER_CONSTANT, cv::Scalar::all(0));
  DetectOptions whole = options;
  whole.tiles = 0;  // the photo is small or one big face: tiles would cut it
  const auto back = [&](double v, int limit) {
    return std::clamp(static_cast<int>(std::lround((v - pad) / shrink)), 0, limit);
  };
  std::vector<Face> faces;
  const cv::Matx23d photoToCanvas(shrink, 0, pad, 0, shrink, pad);
  for (Face face : detector.Detect(padded, whole, timings)) {
    if (!FoundOnPhoto(face, photoToCanvas, bgr.size(), 0)) continue;
    face.rect = {back(face.rect[0], bgr.cols), back(face.rect[1], bgr.rows), back(face.rect[2], bgr.cols),
                 back(face.rect[3], bgr.rows)};
    if (face.rect[2] <= face.rect[0] || face.rect[3] <= face.rect[1]) continue;
    for (size_t k = 0; k < face.keypoints.size(); ++k)
      face.keypoints[k] = static_cast<float>((face.keypoints[k] - pad) / shrink);
    faces.push_back(face);
  }
  return faces;
}

cv::Rect FaceEmbedJob::StoredCropReads(const PixelRect& face) { return SquareAround(face, StoredCrop::kScale); }

StoredCrop FaceEmbedJob::MakeStoredCrop(const cv::Mat& bgr, const PixelRect& face) {
  const cv::Rect region = StoredCropReads(face);
  cv::Mat square = CutPadded(bgr, region);
  const double shrink = std::min(1.0, static_cast<double>(StoredCrop::kMaxSide) / square.cols);
  if (shrink < 1.0) {
    cv::Mat small;
    const int side = std::max(1, static_cast<int>(std::lround(square.cols * shrink)));
    ResizeArea(square, small, cv::Size(side, side));
    square = small;
  }
  StoredCrop crop;
  // From region pixels to crop pixels (CutPadded may already have shrunk a very large region).
  const double scale = static_cast<double>(square.cols) / std::max(1, region.width);
  const auto map = [&](int v, int origin) { return static_cast<int>(std::lround((v - origin) * scale)); };
  crop.face = {map(face[0], region.x), map(face[1], region.y), map(face[2], region.x), map(face[3], region.y)};
  crop.jpeg = EncodeJpeg(square, StoredCrop::kJpegQuality);
  return crop;
}

double FaceEmbedJob::DecodedShare(const PhotoPixels& photo) const {
  return static_cast<double>(photo.decoded().area()) / std::max(1.0, static_cast<double>(width()) * height());
}

cv::Rect FaceEmbedJob::CropsRead(const PixelRect& box) const {
  // Each crop is a square about the box's centre (the embedder's turned by the face's tilt, so at most its side
  // times sqrt 2 wide), so the largest holds them all; a warp's samples reach AlignedCropReads' 2 pixels further.
  const double side = std::max({kUprightLookScale, StoredCrop::kScale, request_.cropScale * std::sqrt(2.0)});
  const cv::Rect square = SquareAround(box, side);
  return {square.x - 2, square.y - 2, square.width + 4, square.height + 4};
}

std::vector<Face> FaceEmbedJob::FindFaces(WorkerContext& ctx, const cv::Mat& view, PhotoPixels& photo) {
  if (!ctx.faceDetector) throw JobError(ErrorCode::kInternal, "engine has no face detector");
  std::vector<Face> faces =
      DetectFaces(*ctx.faceDetector, view, request_.detect, &detectTimings_, cv::Size(width(), height()));
  if (!faces.empty()) return SortedByScore(std::move(faces));
  // The second passes look at the whole photo.
  const cv::Mat& image = photo.Whole();
  const double turnedMaxSide = TurnedPassMaxSide(*ctx.faceDetector);
  // A second pass's faces pass the bar of pipelines/rotated_face_pass.h, or none counts: it must not make one up.
  const auto seenAgain = [&](std::vector<Face> found) {
    found.erase(std::remove_if(found.begin(), found.end(),
                               [&](const Face& face) {
                                 return !SeenAgainUpright(*ctx.faceDetector, image, face, request_.detect,
                                                          turnedMaxSide, &detectTimings_);
                               }),
                found.end());
    return found;
  };
  faces = seenAgain(DetectInPadded(*ctx.faceDetector, image, request_.detect, &detectTimings_));
  for (const double degrees : {-kRotatedPassDegrees, kRotatedPassDegrees}) {
    if (!faces.empty() || !request_.rotatedPasses) break;
    faces = seenAgain(DetectRotated(*ctx.faceDetector, image, request_.detect, degrees, kTightCropPadding,
                                    turnedMaxSide, &detectTimings_, true));
  }
  return SortedByScore(std::move(faces));
}

std::vector<Face> FaceEmbedJob::SortedByScore(std::vector<Face> faces) {
  std::stable_sort(faces.begin(), faces.end(), [](const Face& a, const Face& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.rect[0] != b.rect[0]) return a.rect[0] < b.rect[0];
    return a.rect[1] < b.rect[1];
  });
  return faces;
}

bool FaceEmbedJob::LandmarksAt(WorkerContext& ctx, const cv::Mat& view, PhotoPixels& photo, const PixelRect& rect,
                               FaceKeypoints* out) {
  const auto box = [](const PixelRect& r) { return Box{float(r[0]), float(r[1]), float(r[2]), float(r[3])}; };
  float best = kLandmarkMinIou;
  bool found = false;
  for (const Face& face : FindFaces(ctx, view, photo)) {
    const float overlap = Iou(box(face.rect), box(rect));
    if (overlap < best) continue;
    best = overlap;
    *out = face.keypoints;
    found = true;
  }
  return found;
}

void FaceEmbedJob::Execute(WorkerContext& ctx) {
  if (!ctx.faceEmbedder) throw JobError(ErrorCode::kInternal, "engine has no face embedding model");
  // The whole-image pass sees what detectFaces sees: the photo decoded as that route decodes it (a JPEG smaller, by
  // libjpeg's DCT scaling) and letterboxed from there in one step. A face it reports is then one the detector route
  // reports, with the same score; halving the decoded photo instead once scored a 0.32 "face" 0.68 (docs/models.md,
  // "No face where there is none"). The crops are cut from the photo at its own size, decoded again only around the
  // face where the detector's view is smaller (image/photo_pixels.h), and whole for the second passes.
  const bool detects = !request_.useRect || (request_.align && !request_.hasKeypoints);
  if (detects && !ctx.faceDetector) throw JobError(ErrorCode::kInternal, "engine has no face detector");
  const cv::Mat view = detects ? DecodeImage(ctx.faceDetector->NeededSide(request_.detect)) : cv::Mat();
  PhotoPixels photo([this](const cv::Rect& region, cv::Rect* decoded) { return DecodeImageRegion(region, decoded); },
                    !view.empty() && view.cols == width() && view.rows == height() ? view : cv::Mat());

  if (request_.useRect) {
    // No view decoded: the photo's size, which the rect is clamped to, comes from decoding it whole, as before.
    if (view.empty()) photo.Whole();
    PixelRect r = request_.rect;
    r[0] = std::clamp(r[0], 0, width());
    r[2] = std::clamp(r[2], 0, width());
    r[1] = std::clamp(r[1], 0, height());
    r[3] = std::clamp(r[3], 0, height());
    if (r[2] <= r[0] || r[3] <= r[1])
      throw JobError(ErrorCode::kInvalidArgument, "the face rect lies outside the image");
    chosen_ = r;
    chosenScore_ = 1;
    if (request_.align && request_.hasKeypoints) {
      chosenKeypoints_ = request_.keypoints;
      aligned_ = true;
    } else if (request_.align) {
      aligned_ = LandmarksAt(ctx, view, photo, r, &chosenKeypoints_);  // none found: the box crop
    }
  } else {
    faces_ = FindFaces(ctx, view, photo);
    decodedShare_ = DecodedShare(photo);
    if (faces_.empty()) return;  // nothing to embed: a result, not an error
    chosen_ = faces_.front().rect;
    chosenScore_ = faces_.front().score;
    chosenKeypoints_ = faces_.front().keypoints;
    aligned_ = request_.align;
  }
  photo.Covering(CropsRead(chosen_));  // one decode for every crop below, unless the upright look moves the face

  // The box the crop is cut around: the detector's, or the one an upright look at a tilted face gave.
  PixelRect cropBox = chosen_;
  if (aligned_ && ctx.faceDetector) {
    Face face;
    face.rect = chosen_;
    face.keypoints = chosenKeypoints_;
    face =
        UprightLandmarks(*ctx.faceDetector, photo.Covering(UprightLandmarksReads(chosen_)), face, request_.detect,
                         kUprightWithinDegrees, kUprightRounds, TurnedPassMaxSide(*ctx.faceDetector), &detectTimings_);
    cropBox = face.rect;
    chosenKeypoints_ = face.keypoints;
  }
  const FaceKeypoints* keypoints = aligned_ ? &chosenKeypoints_ : nullptr;
  const cv::Mat& image = photo.Covering(ctx.faceEmbedder->Reads(cropBox, keypoints, request_.cropScale));
  embedding_ = ctx.faceEmbedder->Embed(image, cropBox, keypoints, request_.cropScale, &embedTimings_);
  embedded_ = true;
  sharpness_ = FaceSharpness(photo.Covering(ToRect(chosen_)), chosen_);
  if (aligned_) {
    if (const auto toCrop = AlignmentTransform(chosenKeypoints_, request_.cropScale, 1))
      rotation_ = RotationDegrees(*toCrop);
  }
  if (request_.keepCrop) crop_ = MakeStoredCrop(photo.Covering(StoredCropReads(chosen_)), chosen_);
  decodedShare_ = DecodedShare(photo);
  if (request_.gallery) {
    const auto t1 = Clock::now();
    if (request_.gallery->dim() != static_cast<int>(embedding_.size())) {
      throw JobError(ErrorCode::kInvalidArgument, "the gallery's dimension differs from the model's embedding size");
    }
    match_ = request_.gallery->Search(embedding_.data());
    searchMs_ = MillisBetween(t1, Clock::now());
  }
}

Napi::Value FaceEmbedJob::Result(Napi::Env env) {
  Napi::Array faces = Napi::Array::New(env, faces_.size());
  for (size_t i = 0; i < faces_.size(); ++i) faces.Set(static_cast<uint32_t>(i), FaceToJs(env, faces_[i]));
  Napi::Object result = Napi::Object::New(env);
  result.Set("width", Napi::Number::New(env, width()));
  result.Set("height", Napi::Number::New(env, height()));
  result.Set("faces", faces);
  if (embedded_) {
    Napi::Object face = Napi::Object::New(env);
    face.Set("rect", NumberArray(env, chosen_));
    face.Set("score", Napi::Number::New(env, chosenScore_));
    face.Set("rotation", rotation_ ? Napi::Value(Napi::Number::New(env, *rotation_)) : env.Null());
    face.Set("sharpness", Napi::Number::New(env, sharpness_));
    result.Set("face", face);
    Napi::Float32Array embedding = Napi::Float32Array::New(env, embedding_.size());
    std::memcpy(embedding.Data(), embedding_.data(), embedding_.size() * sizeof(float));
    result.Set("embedding", embedding);
  } else {
    result.Set("face", env.Null());
    result.Set("embedding", env.Null());
  }
  if (embedded_ && request_.keepCrop) {
    Napi::Object crop = Napi::Object::New(env);
    crop.Set("jpeg", Napi::Buffer<uchar>::Copy(env, crop_.jpeg.data(), crop_.jpeg.size()));
    crop.Set("rect", NumberArray(env, crop_.face));
    result.Set("crop", crop);
  } else {
    result.Set("crop", env.Null());
  }
  result.Set("match", GalleryMatchToJs(env, match_));

  Napi::Object timings = Napi::Object::New(env);
  timings.Set("queueMs", Napi::Number::New(env, queueMs()));
  timings.Set("decodeMs", Napi::Number::New(env, decodeMs()));
  timings.Set("decodes", Napi::Number::New(env, decodes()));
  timings.Set("decodedShare", Napi::Number::New(env, decodedShare_));
  timings.Set("detectMs", Napi::Number::New(env, detectTimings_.preprocessMs + detectTimings_.inferenceMs +
                                                     detectTimings_.postprocessMs));
  timings.Set("embedPreprocessMs", Napi::Number::New(env, embedTimings_.preprocessMs));
  timings.Set("embedInferenceMs", Napi::Number::New(env, embedTimings_.inferenceMs));
  timings.Set("searchMs", Napi::Number::New(env, searchMs_));
  result.Set("timings", timings);
  return result;
}

}  // namespace edgecv
