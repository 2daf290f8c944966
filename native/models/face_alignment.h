// Face alignment: the similarity transform (rotation, uniform scale, translation) that carries a detected face's
// landmarks onto a canonical template gives the face's in-plane tilt; a tilted face's box crop is cut turned upright
// by it. A face tilted in the image plane reaches the embedder upright, as the faces it was trained on were.
#pragma once

#include <array>
#include <optional>

#include <opencv2/core.hpp>

namespace edgecv {

// The detector's keypoints: 6 x (x, y) in image pixels (native/models/face_detector.h: eyes, nose, mouth, ear
// tragions).
using FaceKeypoints = std::array<float, 12>;

// The canonical landmarks, in units of the face box's longer side from the box's centre: the detector's mean
// eyes, nose tip and mouth centre on upright faces (mirror-symmetrised), so a face fitted to it reads as upright
// when it looks as the detector's upright faces do (both the eye line and the eyes-to-mouth axis count).
// Changing it changes every tilted face's embedding: bump FACE_ALIGNMENT in src/engine/face-embedding.ts with it.
// The ears are left out: on a turned head they move the most.
struct AlignmentTemplate {
  static constexpr int kPoints = 4;  // the detector's first four keypoints: right eye, left eye, nose tip, mouth
  static constexpr std::array<float, 2 * kPoints> kBoxUnits = {-0.185f, -0.175f, 0.185f, -0.175f,
                                                               0.0f,    0.047f,  0.0f,   0.231f};
};

// The transform from image pixels to the pixels of a side x side crop whose template is scaled by 1 / cropScale
// (cropScale: crop side / face box side, as for the box crop). nullopt when the landmarks give none (coincident).
std::optional<cv::Matx23d> AlignmentTransform(const FaceKeypoints& keypoints, double cropScale, int side);

// A face the landmarks show tilted less than this is taken as upright and cut as the plain box crop: the embedder was
// trained on such crops and copes with small tilts, and turning by a few degrees would only move every upright
// face's vector (the strangers they resemble included) for nothing.
constexpr double kUprightWithinDegrees = 10;

// The box crop (the square `cropScale` times the box's longer side around its centre, at side x side) turned
// upright by the tilt the landmarks give (AlignmentTransform's rotation): image pixels to crop pixels. nullopt when
// the landmarks give no tilt or one within kUprightWithinDegrees: then the plain box crop is the cut.
std::optional<cv::Matx23d> UprightBoxTransform(const FaceKeypoints& keypoints, const std::array<int, 4>& box,
                                               double cropScale, int side);

// The face's in-plane rotation that `toCrop` undoes, in degrees, counterclockwise on screen positive (the sense of
// cv::getRotationMatrix2D).
double RotationDegrees(const cv::Matx23d& toCrop);

// The side x side crop of `bgr` through `toCrop` into `out`, black where it leaves the image. A large face is shrunk
// with an area filter first (a bilinear warp alone would alias it, as the box crop's INTER_AREA avoids).
void AlignedCrop(const cv::Mat& bgr, const cv::Matx23d& toCrop, int side, cv::Mat& out);

// The pixels of the image AlignedCrop reads (may reach past the image): the crop's footprint, with the neighbours
// its bilinear warp samples.
cv::Rect AlignedCropReads(const cv::Matx23d& toCrop, int side);

}  // namespace edgecv
