// The face detector's passes beyond one look at the photo. A detection pass on the photo turned in the image plane:
// the detector was trained on faces near upright and loses those tilted far from it; turned by a fixed angle, such a
// face comes back near upright, and its box and landmarks are mapped back to the photo's pixels. And the look again
// at a face from another angle and scale that every reported face under kSureFaceScore must pass (DetectFaces).
#pragma once

#include <vector>

#include <opencv2/core.hpp>

#include "models/crop.h"
#include "models/face_alignment.h"
#include "models/face_detector.h"
#include "runtime/stage_timings.h"

namespace edgecv {

// The bar a face found by a second pass (the padded or a turned copy of the photo on a larger black canvas) must
// pass to count: the detector reports faces of the photo itself, so a face the canvas made up is no face.
//  - Its eyes, nose and mouth lie on the photo, and most of its box (kMinShareOnPhoto): a face is not in the border.
//  - A turned pass's face is tilted in the photo toward the turn (by its landmarks): the turn brought it nearer
//    upright. One tilted the other way the whole-image pass saw nearer upright, and did not report.
//  - The padded pass's face fills at least kMinPaddedSide of the photo's longer side: that pass shows the photo
//    smaller than the whole-image pass, so what it alone may add is a face too large for that pass. The whole-image
//    pass finds every upright johns face up to 0.45 of the photo's side and misses some from 0.54 on (docs/models.md).
//  - Its box is at least kMinSide photo pixels: the passes are there to give recognition and enrolment a face to
//    name, and they judge none smaller (MIN_JUDGED_FACE_SIDE, src/gallery/recognition-quality.ts).
struct SecondPassBar {
  static constexpr double kMinShareOnPhoto = 0.5;
  static constexpr double kMinSide = 28;
  static constexpr double kMinPaddedSide = 0.5;
};

// Whether `onCanvas`, a face a second pass found on its canvas (the photo mapped onto it by `photoToCanvas`, turned
// `turnedDegrees`, black elsewhere), passes SecondPassBar's geometry.
bool FoundOnPhoto(const Face& onCanvas, const cv::Matx23d& photoToCanvas, cv::Size photo, double turnedDegrees);

// How much larger than a face's box the look SeenAgainUpright takes is (its side, centred on the box).
constexpr double kSeenAgainContext = 4.0;

// Whether the detector finds `face` (in `bgr`'s pixels) again in a look at its surroundings turned upright by the
// tilt its landmarks give: the view in which it finds faces best, of the photo's own pixels; found again means a face
// there overlapping it by at least half (intersection over union). A face counts only when found so, whichever pass
// found it: one the detector made up of a petal, a parrot or a pass's black canvas is seldom seen again from another
// angle and scale.
bool SeenAgainUpright(FaceDetector& detector, const cv::Mat& bgr, const Face& face, const DetectOptions& options,
                      double maxSide, StageTimings* timings);

// A face the detector scores at least this needs no second look. The look costs a detector pass a face, and the
// faces the detector makes up score low: 0.60-0.75 on the 4 of 401 faceless photos it gives one (docs/models.md).
constexpr float kSureFaceScore = 0.8f;

// The faces of `view` (the photo as decoded for the detector) the detector reports: its whole-image pass's (and
// tiles') faces scoring kSureFaceScore or that it sees again (SeenAgainUpright), in the photo's own pixels (`full`,
// its size; empty: `view`'s). Every face route reports these: detectFaces, and recognition and enrolment's
// whole-image pass.
std::vector<Face> DetectFaces(FaceDetector& detector, const cv::Mat& view, const DetectOptions& options,
                              StageTimings* timings, cv::Size full = {});

// The largest copy of the photo a turned pass or a second look warps: the detector sees it letterboxed to its input,
// so a copy twice that keeps what the shrink needs, and warping a larger one would only cost time.
double TurnedPassMaxSide(const FaceDetector& detector);

// Faces of `bgr` found with the photo turned `degrees` counterclockwise (on a canvas grown to hold it, with a black
// border of `padding` x its longer side, so a tight face crop keeps a margin), in `bgr`'s pixels. The box comes back
// as the detected box's size around its mapped-back centre. A photo larger than `maxSide` is shrunk first: the
// detector sees it at its small input size anyway. With `secondPass`, only faces FoundOnPhoto passes come back.
std::vector<Face> DetectRotated(FaceDetector& detector, const cv::Mat& bgr, const DetectOptions& options,
                                double degrees, double padding, double maxSide, StageTimings* timings,
                                bool secondPass = false);

// The landmarks of the face at `rect` seen again turned upright. On a tilted face the detector places the landmarks
// partway toward upright, so the tilt they give falls short of the true one; looked at turned by that tilt, the
// face is nearer upright and its landmarks truer. Looks again while the last look saw the face more than
// `minDegrees` from upright, at most `maxRounds` times; returns `keypoints` unchanged when the face is not found again.
// The box comes back too: the one the upright look gave, as DetectRotated maps it back.
Face UprightLandmarks(FaceDetector& detector, const cv::Mat& bgr, Face face, const DetectOptions& options,
                      double minDegrees, int maxRounds, double maxSide, StageTimings* timings);

// The side of the look UprightLandmarks takes, as a multiple of the box's longer side: the face with a margin of half
// its box each side, as the stored crop holds it (the detector needs some context).
constexpr double kUprightLookScale = 2.0;
// The pixels of `bgr` UprightLandmarks reads for a face at `rect` (may reach past the image).
inline cv::Rect UprightLandmarksReads(const PixelRect& rect) { return SquareAround(rect, kUprightLookScale); }

}  // namespace edgecv
