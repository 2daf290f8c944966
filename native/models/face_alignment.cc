#include "models/face_alignment.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <opencv2/calib3d.hpp>
#include <opencv2/imgproc.hpp>

#include "image/area_resize.h"
#include "models/crop.h"

namespace edgecv {

std::optional<cv::Matx23d> AlignmentTransform(const FaceKeypoints& keypoints, double cropScale, int side) {
  std::vector<cv::Point2f> from, to;
  for (int i = 0; i < AlignmentTemplate::kPoints; ++i) {
    from.emplace_back(keypoints[2 * i], keypoints[2 * i + 1]);
    const auto& t = AlignmentTemplate::kBoxUnits;
    to.emplace_back(static_cast<float>(side * (0.5 + t[2 * i] / cropScale)),
                    static_cast<float>(side * (0.5 + t[2 * i + 1] / cropScale)));
  }
  for (const cv::Point2f& p : from) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) return std::nullopt;
  }
  // A least-squares fit over all four points: a reprojection threshold no point can exceed keeps every point an
  // inlier, so the RANSAC stage only seeds the refinement (a 2-point minimal fit would ignore the nose and mouth).
  const double anyDistance = 1e9;
  const cv::Mat fit = cv::estimateAffinePartial2D(from, to, cv::noArray(), cv::RANSAC, anyDistance);
  if (fit.empty()) return std::nullopt;
  const cv::Matx23d m(fit);
  const double scale = std::hypot(m(0, 0), m(1, 0));
  if (!(scale > 1e-6) || !std::isfinite(scale)) return std::nullopt;
  return m;
}

std::optional<cv::Matx23d> UprightBoxTransform(const FaceKeypoints& keypoints, const std::array<int, 4>& box,
                                               double cropScale, int side) {
  const std::optional<cv::Matx23d> fit = AlignmentTransform(keypoints, 1.0, 1);
  if (!fit) return std::nullopt;
  const double turn = std::atan2((*fit)(1, 0), (*fit)(0, 0));
  if (std::abs(turn) * 180.0 / CV_PI <= kUprightWithinDegrees) return std::nullopt;
  const double boxSide = std::max(1, std::max(box[2] - box[0], box[3] - box[1]));
  const double scale = side / (cropScale * boxSide);
  const double c = scale * std::cos(turn), s = scale * std::sin(turn);
  const double cx = (box[0] + box[2]) / 2.0, cy = (box[1] + box[3]) / 2.0;
  // The box centre goes to the crop centre (pixel centres: (side - 1) / 2), turned and scaled about it.
  const double half = (side - 1) / 2.0;
  return cv::Matx23d(c, -s, half - (c * cx - s * cy), s, c, half - (s * cx + c * cy));
}

double RotationDegrees(const cv::Matx23d& toCrop) { return std::atan2(toCrop(1, 0), toCrop(0, 0)) * 180.0 / CV_PI; }

namespace {

// The image region the crop's corners come from.
cv::Rect Footprint(const cv::Matx23d& toCrop, int side) {
  cv::Matx23d toImage;
  cv::invertAffineTransform(toCrop, toImage);
  float l = 1e30f, t = 1e30f, r = -1e30f, b = -1e30f;
  for (const cv::Point2d corner :
       {cv::Point2d(0, 0), cv::Point2d(side, 0), cv::Point2d(0, side), cv::Point2d(side, side)}) {
    const cv::Vec2d p = toImage * cv::Vec3d(corner.x, corner.y, 1);
    l = std::min(l, static_cast<float>(p[0]));
    t = std::min(t, static_cast<float>(p[1]));
    r = std::max(r, static_cast<float>(p[0]));
    b = std::max(b, static_cast<float>(p[1]));
  }
  return {static_cast<int>(std::floor(l)), static_cast<int>(std::floor(t)),
          std::max(1, static_cast<int>(std::ceil(r - l)) + 1), std::max(1, static_cast<int>(std::ceil(b - t)) + 1)};
}

}  // namespace

cv::Rect AlignedCropReads(const cv::Matx23d& toCrop, int side) {
  // A bilinear sample at x reads floor(x) and floor(x) + 1; warpAffine rounds x to 1/32 pixel first.
  constexpr int kReach = 2;
  const cv::Rect footprint = Footprint(toCrop, side);
  return {footprint.x - kReach, footprint.y - kReach, footprint.width + 2 * kReach, footprint.height + 2 * kReach};
}

void AlignedCrop(const cv::Mat& bgr, const cv::Matx23d& toCrop, int side, cv::Mat& out) {
  const double scale = std::hypot(toCrop(0, 0), toCrop(1, 0));  // crop pixels per image pixel
  if (scale >= 1.0) {
    cv::warpAffine(bgr, out, toCrop, cv::Size(side, side), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(0));
    return;
  }
  // Shrink the crop's footprint to about the crop's scale first, then warp.
  const cv::Rect region = Footprint(toCrop, side);
  const cv::Mat footprint = CutPadded(bgr, region);  // may come back already shrunk (kMaxCutSide)
  const cv::Size small(std::max(1, static_cast<int>(std::lround(region.width * scale))),
                       std::max(1, static_cast<int>(std::lround(region.height * scale))));
  cv::Mat shrunk;
  if (small.width < footprint.cols && small.height < footprint.rows)
    ResizeArea(footprint, shrunk, small);
  else
    shrunk = footprint;
  // Image pixel = region origin + (shrunk pixel + 0.5) x (region size / shrunk size) - 0.5 (pixel centres): fold
  // that into the transform.
  const double fx = static_cast<double>(region.width) / shrunk.cols,
               fy = static_cast<double>(region.height) / shrunk.rows;
  const double x0 = region.x + 0.5 * (fx - 1), y0 = region.y + 0.5 * (fy - 1);
  const cv::Matx23d fromShrunk(toCrop(0, 0) * fx, toCrop(0, 1) * fy,
                               toCrop(0, 0) * x0 + toCrop(0, 1) * y0 + toCrop(0, 2), toCrop(1, 0) * fx,
                               toCrop(1, 1) * fy, toCrop(1, 0) * x0 + toCrop(1, 1) * y0 + toCrop(1, 2));
  cv::warpAffine(shrunk, out, fromShrunk, cv::Size(side, side), cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                 cv::Scalar::all(0));
}

}  // namespace edgecv
