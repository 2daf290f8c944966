// A detection pass on the photo turned in the image plane. The face detector was trained on faces near upright and
// loses those tilted far from it; turned by a fixed angle, such a face comes back near upright. Its box and
// landmarks are mapped back to the photo's pixels.
#pragma once

#include <vector>

#include <opencv2/core.hpp>

#include "models/crop.h"
#include "models/face_alignment.h"
#include "models/face_detector.h"
#include "runtime/stage_timings.h"

namespace edgecv {

// Faces of `bgr` found with the photo turned `degrees` counterclockwise (on a canvas grown to hold it, with a black
// border of `padding` x its longer side, so a tight face crop keeps a margin), in `bgr`'s pixels. The box comes back
// as the detected box's size around its mapped-back centre. A photo larger than `maxSide` is shrunk first: the
// detector sees it at its small input size anyway.
std::vector<Face> DetectRotated(FaceDetector& detector, const cv::Mat& bgr, const DetectOptions& options, double degrees,
                                double padding, double maxSide, StageTimings* timings);

// The landmarks of the face at `rect` seen again turned upright. On a tilted face the detector places the landmarks
// partway toward upright, so the tilt they give falls short of the true one; looked at turned by that tilt, the
// face is nearer upright and its landmarks truer. Looks again while the last look saw the face more than
// `minDegrees` from upright, at most `maxRounds` times; returns `keypoints` unchanged when the face is not found again.
// The box comes back too: the one the upright look gave, as DetectRotated maps it back.
Face UprightLandmarks(FaceDetector& detector, const cv::Mat& bgr, Face face, const DetectOptions& options, double minDegrees,
                      int maxRounds, double maxSide, StageTimings* timings);

}  // namespace edgecv
