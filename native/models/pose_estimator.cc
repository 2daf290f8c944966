#include "models/pose_estimator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <stdexcept>

#include "models/crop.h"
#include "runtime/inference_model.h"

namespace edgecv {
namespace {

// Constants of the original graph's post-processing (movenet-multipose.json, after the cut points).
constexpr int kCentreWindow = 5;                 // MaxPool ksize 5, SAME: a centre is the max of its 5x5 window
constexpr float kPeakTolerance = 1.013279e-06f;  // |centre - maxpool| < this counts as a peak
constexpr float kDistanceSpread = 0.30004883f;   // weight = exp(-d^2 / (spread * grid)), d in heatmap cells
constexpr float kKeypointValid = 0.12695312f;    // keypoints above this count towards the person score

// The crop's side / the box's longer side. Context around the person matters to MoveNet: on the labelled persons
// more are posed as the crop grows, up to a plateau from 2.0 to 3.0; 2.0 is the cheapest of that plateau
// (docs/models.md, "Pose and objects").
constexpr double kCropScale = 2.0;
constexpr int kMinCropSide = 8;  // smaller crops are not posed

// The square region cut around a person's box.
cv::Rect CropAround(const Box& b) {
  return SquareAround({static_cast<int>(b[0]), static_cast<int>(b[1]), static_cast<int>(b[2]), static_cast<int>(b[3])},
                      kCropScale);
}

float Sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

// 1. Person centres: local maxima of the sigmoid centre map in a 5x5 window, best first (TopKV2: by score, ties
//    to the lower index); (score, cell), at most maxPoses.
std::vector<std::pair<float, int>> CentrePeaks(const float* centreLogits, int g, int maxPoses) {
  const int cells = g * g;
  std::vector<float> centre(cells);
  for (int i = 0; i < cells; ++i) centre[i] = Sigmoid(centreLogits[i]);
  std::vector<std::pair<float, int>> peaks;
  const int r = kCentreWindow / 2;
  for (int y = 0; y < g; ++y) {
    for (int x = 0; x < g; ++x) {
      float windowMax = 0;
      for (int yy = std::max(0, y - r); yy <= std::min(g - 1, y + r); ++yy) {
        for (int xx = std::max(0, x - r); xx <= std::min(g - 1, x + r); ++xx)
          windowMax = std::max(windowMax, centre[yy * g + xx]);
      }
      const float v = centre[y * g + x];
      peaks.emplace_back(std::abs(v - windowMax) < kPeakTolerance ? v : 0.f, y * g + x);
    }
  }
  const int k = std::min<int>(maxPoses, cells);
  std::partial_sort(peaks.begin(), peaks.begin() + k, peaks.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  peaks.resize(k);
  return peaks;
}

// A person found at a centre: its box and regressed keypoints, in heatmap cells.
struct Candidate {
  float centreScore;
  float ymin, xmin, ymax, xmax;
  std::array<float, 2 * Pose::kKeypoints> regressed;  // (y, x) per keypoint
};

// 2. Per centre: the box and the regressed keypoints.
std::vector<Candidate> Candidates(const std::vector<std::pair<float, int>>& peaks, const float* boxScale,
                                  const float* boxOffset, const float* regress, int g) {
  const int kpts = Pose::kKeypoints;
  const float side = static_cast<float>(g);
  std::vector<Candidate> people(peaks.size());
  for (size_t p = 0; p < peaks.size(); ++p) {
    const int cell = peaks[p].second;
    const float cy = static_cast<float>(cell / g), cx = static_cast<float>(cell % g);
    Candidate& c = people[p];
    c.centreScore = peaks[p].first;
    const float sy = std::max(0.f, boxScale[2 * cell]), sx = std::max(0.f, boxScale[2 * cell + 1]);
    const float oy = cy + boxOffset[2 * cell], ox = cx + boxOffset[2 * cell + 1];
    c.ymin = std::clamp(oy - sy / 2, 0.f, side);
    c.xmin = std::clamp(ox - sx / 2, 0.f, side);
    c.ymax = std::clamp(oy + sy / 2, 0.f, side);
    c.xmax = std::clamp(ox + sx / 2, 0.f, side);
    for (int j = 0; j < kpts; ++j) {
      c.regressed[2 * j] = cy + regress[cell * 2 * kpts + 2 * j];
      c.regressed[2 * j + 1] = cx + regress[cell * 2 * kpts + 2 * j + 1];
    }
  }
  return people;
}

// The keypoint heatmap and offsets of one output, on a g x g grid.
struct PoseMaps {
  int g;
  const float* heatLogits;
  const float* offsets;
};

// heatmap x exp(-distance^2 to the regressed point / spread) of keypoint j at a cell, 0 outside the person's box.
// The heatmap's sigmoid is taken where a cell is weighed, not over the whole grid: only cells inside a kept
// person's box are.
float Weighted(const Candidate& c, const PoseMaps& maps, int y, int x, int j) {
  if (y < c.ymin || y >= c.ymax || x < c.xmin || x >= c.xmax) return 0.f;
  const float spread = kDistanceSpread * static_cast<float>(maps.g);
  const float dy = y - c.regressed[2 * j], dx = x - c.regressed[2 * j + 1];
  return Sigmoid(maps.heatLogits[(y * maps.g + x) * Pose::kKeypoints + j]) * std::exp(-(dy * dy + dx * dx) / spread);
}

// 3. Each keypoint snaps to the heatmap cell, inside the person's box, that maximizes Weighted(). Its score is the
//    best weighted value any of the people gives that cell (the graph's Max over people, kept as is). The pose
//    scores its centre times the mean of its keypoint scores above kKeypointValid.
Pose SnapKeypoints(const Candidate& c, const std::vector<Candidate>& people, const PoseMaps& maps,
                   const Letterbox& box) {
  const int g = maps.g;
  const int kpts = Pose::kKeypoints;
  // The cells inside the box, the only ones Weighted() does not zero; cell 0 stands when none weighs more than 0,
  // as it did when every cell of the grid was scanned.
  const int y0 = std::max(0, static_cast<int>(std::ceil(c.ymin))),
            y1 = std::min(g, static_cast<int>(std::ceil(c.ymax)));
  const int x0 = std::max(0, static_cast<int>(std::ceil(c.xmin))),
            x1 = std::min(g, static_cast<int>(std::ceil(c.xmax)));
  Pose pose;
  float sum = 0;
  int valid = 0;
  for (int j = 0; j < kpts; ++j) {
    float best = 0;
    int bestCell = 0;
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x < x1; ++x) {
        const float w = Weighted(c, maps, y, x, j);
        if (w > best) {
          best = w;
          bestCell = y * g + x;
        }
      }
    }
    const int by = bestCell / g, bx = bestCell % g;
    float score = 0;
    for (const Candidate& other : people) score = std::max(score, Weighted(other, maps, by, bx, j));
    const float y = (by + maps.offsets[bestCell * 2 * kpts + 2 * j]) * 4.f;  // input pixels
    const float x = (bx + maps.offsets[bestCell * 2 * kpts + 2 * j + 1]) * 4.f;
    pose.keypoints[j] = {box.ToImageX(x), box.ToImageY(y), score};
    if (score > kKeypointValid) {
      sum += score;
      ++valid;
    }
  }
  pose.score = c.centreScore * sum / std::max(1, valid);
  pose.box = {box.ToImageX(c.xmin * 4.f), box.ToImageY(c.ymin * 4.f), box.ToImageX(c.xmax * 4.f),
              box.ToImageY(c.ymax * 4.f)};
  return pose;
}

}  // namespace

PoseEstimator::PoseEstimator(const PoseEstimatorSpec& spec, const RuntimeOptions& runtime) : spec_(spec) {
  const std::string what = "pose model " + spec_.model.path + ": ";
  if (spec_.inputSize < 32 || spec_.inputSize % 4 != 0)
    throw std::runtime_error(what + "inputSize must be a multiple of 4");
  if (spec_.outputs.size() != kOutputs) throw std::runtime_error(what + "needs exactly 6 output names");
  model_ = LoadInferenceModel(spec_.model, spec_.outputs, runtime, what);
  grid_ = spec_.inputSize / 4;

  const std::vector<cv::Mat> outputs = WarmUp(*model_, spec_.inputSize, what);
  const int k = Pose::kKeypoints;
  const int channels[kOutputs] = {1, 2, 2, k, 2 * k, 2 * k};
  for (int i = 0; i < kOutputs; ++i) {
    if (!IsNhwc(outputs[i], grid_, grid_, channels[i])) {
      throw std::runtime_error(what + "output \"" + spec_.outputs[i] + "\" is " + ShapeString(outputs[i]) +
                               ", expected [1," + std::to_string(grid_) + "," + std::to_string(grid_) + "," +
                               std::to_string(channels[i]) + "]");
    }
  }
}

std::vector<Pose> PoseEstimator::Detect(const cv::Mat& bgr, const PoseOptions& options, StageTimings* timings) {
  return RunLetterboxed(bgr, spec_, *model_, timings, [&](const std::vector<cv::Mat>& outputs, const Letterbox& box) {
    return Postprocess(outputs, box, options);
  });
}

namespace {
// One MoveNet pass over a crop: its region and the poses found there, in image pixels; taken marks the poses
// already given to a person.
struct CropPass {
  cv::Rect region;
  std::vector<Pose> candidates;
  std::vector<bool> taken;
};

Pose Shifted(Pose p, const cv::Point& by) {
  for (Keypoint& k : p.keypoints) {
    k.x += by.x;
    k.y += by.y;
  }
  p.box = {p.box[0] + by.x, p.box[1] + by.y, p.box[2] + by.x, p.box[3] + by.y};
  return p;
}

// A pass run for an earlier person also poses this one, instead of a pass of its own, when its crop holds the
// person's box with a quarter of the box's size around it (context for MoveNet), at no less than 0.6 of the
// person's own crop's resolution, and has an untaken pose matching the box at IoU 0.5 or more. On the labelled
// pose set: 57 passes instead of 71, int8 55 posed / 3 stray against 54 / 3, fp32 53 / 3 either way
// (docs/performance.md, "The pose route, stage by stage").
constexpr float kReuseMargin = 0.25f;
constexpr double kReuseScale = 0.6;
constexpr float kReuseIou = 0.5f;

// The untaken pose of `pass` overlapping the box most (-1: none overlaps), and that overlap.
std::pair<int, float> BestUntaken(const CropPass& pass, const Box& b) {
  std::pair<int, float> best{-1, 0.f};
  for (size_t i = 0; i < pass.candidates.size(); ++i) {
    const float overlap = Iou(pass.candidates[i].box, b);
    if (!pass.taken[i] && overlap > best.second) best = {static_cast<int>(i), overlap};
  }
  return best;
}

// A pass already run that poses this person as its own crop would (above), or null.
CropPass* Covering(std::vector<CropPass>& passes, const Box& b, const cv::Rect& own) {
  const float mx = kReuseMargin * (b[2] - b[0]), my = kReuseMargin * (b[3] - b[1]);
  for (CropPass& pass : passes) {
    const cv::Rect& r = pass.region;
    const bool holds =
        b[0] - mx >= r.x && b[2] + mx <= r.x + r.width && b[1] - my >= r.y && b[3] + my <= r.y + r.height;
    if (holds && own.width >= kReuseScale * r.width && BestUntaken(pass, b).second >= kReuseIou) return &pass;
  }
  return nullptr;
}
}  // namespace

std::vector<Pose> PoseEstimator::DetectInBoxes(const cv::Mat& bgr, const std::vector<Box>& boxes,
                                               const PoseOptions& options, StageTimings* timings) {
  PoseOptions inCrop = options;
  inCrop.maxPoses = 6;  // the model's own top-k: the crop's person plus whoever overlaps it
  std::vector<CropPass> passes;
  passes.reserve(boxes.size());  // no reallocation: `pass` below points into it
  std::vector<Pose> poses;
  for (const Box& b : boxes) {
    const cv::Rect region = CropAround(b);
    if (region.width < kMinCropSide) continue;
    CropPass* pass = Covering(passes, b, region);
    if (pass == nullptr) {
      const auto t0 = Clock::now();
      const cv::Mat crop = CutPadded(bgr, region);
      timings->preprocessMs += MillisBetween(t0, Clock::now());  // the crop is MoveNet's preprocessing too
      CropPass run{region, {}, {}};
      for (const Pose& p : Detect(crop, inCrop, timings)) run.candidates.push_back(Shifted(p, region.tl()));
      run.taken.assign(run.candidates.size(), false);
      passes.push_back(std::move(run));
      pass = &passes.back();
    }
    // The person's pose is the one whose box overlaps the person's box most: in a group, neighbours reach into
    // the crop too, and their keypoints fall inside the (overlapping) box as well. Each pose goes to one person.
    const int best = BestUntaken(*pass, b).first;
    if (best < 0) continue;
    pass->taken[best] = true;
    poses.push_back(pass->candidates[best]);
  }
  std::stable_sort(poses.begin(), poses.end(), [](const Pose& x, const Pose& y) { return x.score > y.score; });
  return poses;
}

int PoseEstimator::SideForCrops(const std::vector<Box>& boxes, cv::Size image) const {
  const double longer = std::max(image.width, image.height);
  int side = 0;
  for (const Box& b : boxes) {
    const int crop = std::max(1, CropAround(b).width);  // one too small to pose asks for the whole image
    side = std::max(side, static_cast<int>(std::ceil(longer * spec_.inputSize / crop)));
  }
  return side;
}

std::vector<Pose> PoseEstimator::Postprocess(const std::vector<cv::Mat>& outputs, const Letterbox& box,
                                             const PoseOptions& options) const {
  const PoseMaps maps{grid_, outputs[3].ptr<float>(), outputs[5].ptr<float>()};
  const std::vector<std::pair<float, int>> peaks = CentrePeaks(outputs[0].ptr<float>(), grid_, options.maxPoses);
  const std::vector<Candidate> people =
      Candidates(peaks, outputs[1].ptr<float>(), outputs[2].ptr<float>(), outputs[4].ptr<float>(), grid_);
  std::vector<Pose> poses;
  for (const Candidate& c : people) {
    // A pose scores its centre times the mean of keypoint scores of at most 1: one whose centre is under the
    // threshold is dropped below whatever its keypoints, so they are not looked for (it still scores others').
    if (!(c.centreScore >= options.scoreThreshold) || c.centreScore <= 0) continue;
    Pose pose = SnapKeypoints(c, people, maps, box);
    if (!(pose.score >= options.scoreThreshold)) continue;
    poses.push_back(pose);
  }
  std::sort(poses.begin(), poses.end(), [](const Pose& a, const Pose& b) { return a.score > b.score; });
  return poses;
}

}  // namespace edgecv
