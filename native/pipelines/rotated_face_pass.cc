#include "pipelines/rotated_face_pass.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "image/area_resize.h"
#include "models/box.h"

namespace edgecv {

namespace {

// Two boxes of one face: the detector's NMS merges boxes overlapping more than its iouThreshold (0.3); half is surer.
constexpr float kSameFaceIou = 0.5f;

// The tilt `keypoints` give (native/models/face_alignment.h), 0 when they give none.
double TiltOf(const FaceKeypoints& keypoints) {
  const std::optional<cv::Matx23d> fit = AlignmentTransform(keypoints, 1.0, 1);
  return fit ? RotationDegrees(*fit) : 0;
}

}  // namespace

bool FoundOnPhoto(const Face& f, const cv::Matx23d& photoToCanvas, cv::Size photo, double turnedDegrees) {
  std::vector<cv::Point2f> onPhoto;  // the photo's outline on the canvas
  for (const cv::Point2d p : {cv::Point2d(0, 0), cv::Point2d(photo.width, 0), cv::Point2d(photo.width, photo.height),
                              cv::Point2d(0, photo.height)}) {
    const cv::Vec2d q = photoToCanvas * cv::Vec3d(p.x, p.y, 1);
    onPhoto.emplace_back(static_cast<float>(q[0]), static_cast<float>(q[1]));
  }
  const std::vector<cv::Point2f> box = {{float(f.rect[0]), float(f.rect[1])},
                                        {float(f.rect[2]), float(f.rect[1])},
                                        {float(f.rect[2]), float(f.rect[3])},
                                        {float(f.rect[0]), float(f.rect[3])}};
  for (int k = 0; k < AlignmentTemplate::kPoints; ++k) {
    if (cv::pointPolygonTest(onPhoto, cv::Point2f(f.keypoints[2 * k], f.keypoints[2 * k + 1]), false) < 0) return false;
  }
  std::vector<cv::Point2f> common;
  const double boxArea = double(f.rect[2] - f.rect[0]) * (f.rect[3] - f.rect[1]);
  if (!(cv::intersectConvexConvex(onPhoto, box, common, true) >= SecondPassBar::kMinShareOnPhoto * boxArea))
    return false;
  const double photoSide = std::max(cv::norm(onPhoto[1] - onPhoto[0]), cv::norm(onPhoto[3] - onPhoto[0]));
  const double side = std::max(f.rect[2] - f.rect[0], f.rect[3] - f.rect[1]);
  if (side * std::max(photo.width, photo.height) < SecondPassBar::kMinSide * photoSide) return false;
  if (turnedDegrees != 0) {
    // Tilts are counterclockwise positive, as the turn: the face's tilt in the photo is its tilt on the canvas less
    // the turn. Nearer upright on the canvas than in the photo, or the turn found nothing the photo did not show.
    const double onCanvas = TiltOf(f.keypoints);
    return std::abs(onCanvas) < std::abs(onCanvas - turnedDegrees);
  }
  return side >= SecondPassBar::kMinPaddedSide * photoSide;
}

double TurnedPassMaxSide(const FaceDetector& detector) { return 2 * detector.NeededSide(DetectOptions{}); }

std::vector<Face> DetectFaces(FaceDetector& detector, const cv::Mat& view, const DetectOptions& options,
                              StageTimings* timings, cv::Size full) {
  const double maxSide = TurnedPassMaxSide(detector);
  std::vector<Face> faces = detector.Detect(view, options, timings);
  faces.erase(std::remove_if(faces.begin(), faces.end(),
                             [&](const Face& face) {
                               return face.score < kSureFaceScore &&
                                      !SeenAgainUpright(detector, view, face, options, maxSide, timings);
                             }),
              faces.end());
  if (full.empty() || full == view.size()) return faces;
  // To the photo's own pixels, as FaceDetector::Detect maps them.
  const double sx = static_cast<double>(full.width) / view.cols, sy = static_cast<double>(full.height) / view.rows;
  const auto to = [](double v, double scale, int limit) {
    return std::clamp(static_cast<int>(std::lround(v * scale)), 0, limit);
  };
  for (Face& face : faces) {
    face.rect = {to(face.rect[0], sx, full.width), to(face.rect[1], sy, full.height), to(face.rect[2], sx, full.width),
                 to(face.rect[3], sy, full.height)};
    for (size_t k = 0; k < face.keypoints.size(); k += 2) {
      face.keypoints[k] = static_cast<float>(face.keypoints[k] * sx);
      face.keypoints[k + 1] = static_cast<float>(face.keypoints[k + 1] * sy);
    }
  }
  return faces;
}

bool SeenAgainUpright(FaceDetector& detector, const cv::Mat& bgr, const Face& face, const DetectOptions& options,
                      double maxSide, StageTimings* timings) {
  // The face at a quarter of the look's side, with its surroundings: the full-range detector is made for faces small
  // in the frame. With half its box each side (the face half the look), 3 of the dlib faces it detects were not
  // found again; at a quarter, all of them and every johns face are (docs/models.md, "No face where there is none").
  const PixelRect& rect = face.rect;
  const cv::Rect region = SquareAround(rect, kSeenAgainContext);
  const cv::Mat cut = CutPadded(bgr, region);
  const double toCut = static_cast<double>(cut.cols) / region.width;
  const Box inCut{static_cast<float>((rect[0] - region.x) * toCut), static_cast<float>((rect[1] - region.y) * toCut),
                  static_cast<float>((rect[2] - region.x) * toCut), static_cast<float>((rect[3] - region.y) * toCut)};
  const double tilt = TiltOf(face.keypoints);
  for (const Face& found : DetectRotated(detector, cut, options, std::abs(tilt) > kUprightWithinDegrees ? -tilt : 0.0,
                                         0.0, maxSide, timings)) {
    const Box box{float(found.rect[0]), float(found.rect[1]), float(found.rect[2]), float(found.rect[3])};
    if (Iou(box, inCut) >= kSameFaceIou) return true;
  }
  return false;
}

std::vector<Face> DetectRotated(FaceDetector& detector, const cv::Mat& bgr, const DetectOptions& options,
                                double degrees, double padding, double maxSide, StageTimings* timings,
                                bool secondPass) {
  const auto t0 = Clock::now();
  const double radians = degrees * CV_PI / 180.0;
  const double c = std::abs(std::cos(radians)), s = std::abs(std::sin(radians));
  const double longer = std::max(bgr.cols, bgr.rows);
  const double turnedSide = (c + s) * longer * (1 + 2 * padding);  // bounds the turned, padded canvas
  const double shrink = std::min(1.0, maxSide / turnedSide);
  cv::Mat source = bgr;
  if (shrink < 1.0) {
    ResizeArea(bgr, source,
               cv::Size(std::max(1, static_cast<int>(std::lround(bgr.cols * shrink))),
                        std::max(1, static_cast<int>(std::lround(bgr.rows * shrink)))));
  }
  const double pad = padding * std::max(source.cols, source.rows);
  const cv::Size canvas(static_cast<int>(std::lround(c * source.cols + s * source.rows + 2 * pad)),
                        static_cast<int>(std::lround(s * source.cols + c * source.rows + 2 * pad)));
  cv::Matx23d turn =
      cv::getRotationMatrix2D(cv::Point2f((source.cols - 1) / 2.f, (source.rows - 1) / 2.f), degrees, 1.0);
  turn(0, 2) += (canvas.width - source.cols) / 2.0;
  turn(1, 2) += (canvas.height - source.rows) / 2.0;
  cv::Mat turned;
  cv::warpAffine(source, turned, turn, canvas, cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(0));
  timings->preprocessMs += MillisBetween(t0, Clock::now());

  cv::Matx23d back;
  cv::invertAffineTransform(turn, back);
  const auto toPhoto = [&](double x, double y) {
    const cv::Vec2d p = back * cv::Vec3d(x, y, 1);
    return cv::Point2d(p[0] / shrink, p[1] / shrink);
  };
  DetectOptions whole = options;
  whole.tiles = 0;  // one turned copy of the whole photo, as the padded pass
  std::vector<Face> faces;
  const cv::Matx23d photoToCanvas = turn * cv::Matx33d(shrink, 0, 0, 0, shrink, 0, 0, 0, 1);
  for (Face face : detector.Detect(turned, whole, timings)) {
    if (secondPass && !FoundOnPhoto(face, photoToCanvas, bgr.size(), degrees)) continue;
    const cv::Point2d centre = toPhoto((face.rect[0] + face.rect[2]) / 2.0, (face.rect[1] + face.rect[3]) / 2.0);
    const double halfW = (face.rect[2] - face.rect[0]) / (2 * shrink),
                 halfH = (face.rect[3] - face.rect[1]) / (2 * shrink);
    const auto clampTo = [](double v, int limit) { return std::clamp(static_cast<int>(std::lround(v)), 0, limit); };
    face.rect = {clampTo(centre.x - halfW, bgr.cols), clampTo(centre.y - halfH, bgr.rows),
                 clampTo(centre.x + halfW, bgr.cols), clampTo(centre.y + halfH, bgr.rows)};
    if (face.rect[2] <= face.rect[0] || face.rect[3] <= face.rect[1]) continue;
    for (size_t k = 0; k < face.keypoints.size(); k += 2) {
      const cv::Point2d p = toPhoto(face.keypoints[k], face.keypoints[k + 1]);
      face.keypoints[k] = static_cast<float>(p.x);
      face.keypoints[k + 1] = static_cast<float>(p.y);
    }
    faces.push_back(face);
  }
  return faces;
}

Face UprightLandmarks(FaceDetector& detector, const cv::Mat& bgr, Face face, const DetectOptions& options,
                      double minDegrees, int maxRounds, double maxSide, StageTimings* timings) {
  const PixelRect& rect = face.rect;
  const cv::Rect region = UprightLandmarksReads(rect);
  const cv::Mat cut = CutPadded(bgr, region);
  const double toCut = static_cast<double>(cut.cols) / region.width;  // CutPadded may shrink a huge region
  const cv::Point2d centre(((rect[0] + rect[2]) / 2.0 - region.x) * toCut,
                           ((rect[1] + rect[3]) / 2.0 - region.y) * toCut);
  const double reach = std::max(rect[2] - rect[0], rect[3] - rect[1]) * toCut / 2;
  double lookedAt = 0;  // how far the last look turned the photo: none for the detection pass itself
  for (int round = 0; round < maxRounds; ++round) {
    const std::optional<cv::Matx23d> fit = AlignmentTransform(face.keypoints, 1.0, 1);
    if (!fit) break;
    const double tilt = RotationDegrees(*fit);
    if (std::abs(tilt - lookedAt) <= minDegrees) break;  // the last look saw the face near enough upright
    // The face nearest the box centre, within half the box of it.
    const Face* nearest = nullptr;
    double best = reach;
    const std::vector<Face> faces = DetectRotated(detector, cut, options, -tilt, 0.0, maxSide, timings);
    for (const Face& found : faces) {
      const double d = std::hypot((found.rect[0] + found.rect[2]) / 2.0 - centre.x,
                                  (found.rect[1] + found.rect[3]) / 2.0 - centre.y);
      if (d <= best) {
        best = d;
        nearest = &found;
      }
    }
    if (!nearest) break;
    lookedAt = tilt;
    for (size_t k = 0; k < face.keypoints.size(); k += 2) {
      face.keypoints[k] = static_cast<float>(nearest->keypoints[k] / toCut + region.x);
      face.keypoints[k + 1] = static_cast<float>(nearest->keypoints[k + 1] / toCut + region.y);
    }
    for (size_t k = 0; k < face.rect.size(); ++k) {
      face.rect[k] = static_cast<int>(std::lround(nearest->rect[k] / toCut + (k % 2 == 0 ? region.x : region.y)));
    }
  }
  return face;
}

}  // namespace edgecv
