#include "models/face_detector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "models/box.h"
#include "runtime/inference_model.h"

namespace edgecv {
namespace {

// Fraction of a tile shared with its neighbour. A face smaller than this
// overlap always lies entirely inside at least one tile.
constexpr double kTileOverlap = 0.25;
// Candidates kept for NMS; bounds the O(n^2) merge when thresholds are tiny.
constexpr size_t kMaxCandidates = 2000;
// Anchors a spec may define (BlazeFace has 896 or 2304).
constexpr double kMaxAnchors = 1 << 24;

float Sigmoid(float logit) {
  // MediaPipe clips logits to +-100 before the sigmoid (score_clipping_thresh).
  const float x = std::min(100.f, std::max(-100.f, logit));
  return 1.f / (1.f + std::exp(-x));
}

}  // namespace

FaceDetector::FaceDetector(const FaceDetectorSpec& spec, const RuntimeOptions& runtime) : spec_(spec) {
  const std::string what = "face detector model " + spec_.model.path + ": ";
  if (spec_.inputSize <= 0) throw std::runtime_error(what + "inputSize must be positive");
  if (spec_.anchorLayers.empty()) throw std::runtime_error(what + "anchorLayers is empty");
  if (spec_.scoreOutputs.empty() || spec_.boxOutputs.empty()) {
    throw std::runtime_error(what + "scoreOutputs and boxOutputs must both be non-empty");
  }

  // SSD anchors as MediaPipe generates them with fixed_anchor_size: row-major
  // cells, the anchors of one cell consecutive, centre at the cell centre.
  double total = 0;
  for (const AnchorLayer& layer : spec_.anchorLayers) {
    if (layer.stride <= 0 || layer.anchors <= 0) {
      throw std::runtime_error(what + "anchor layer stride and anchors must be positive");
    }
    const double grid = std::ceil(static_cast<double>(spec_.inputSize) / layer.stride);
    total += grid * grid * layer.anchors;
  }
  // Safety bound, checked before allocating them: far more anchors than any output tensor could match.
  if (total > kMaxAnchors)
    throw std::runtime_error(what + "anchor layers give " + std::to_string(static_cast<long long>(total)) + " anchors");
  for (const AnchorLayer& layer : spec_.anchorLayers) {
    const int grid = (spec_.inputSize + layer.stride - 1) / layer.stride;
    for (int y = 0; y < grid; ++y) {
      for (int x = 0; x < grid; ++x) {
        const cv::Point2f centre((x + 0.5f) / grid, (y + 0.5f) / grid);
        for (int a = 0; a < layer.anchors; ++a) anchors_.push_back(centre);
      }
    }
  }

  outputNames_ = spec_.scoreOutputs;
  outputNames_.insert(outputNames_.end(), spec_.boxOutputs.begin(), spec_.boxOutputs.end());
  model_ = LoadInferenceModel(spec_.model, outputNames_, runtime, what);

  // The warm-up pass also proves the outputs have the shapes the decoder relies on.
  const std::vector<cv::Mat> outputs = WarmUp(*model_, spec_.inputSize, what);
  size_t scores = 0, boxes = 0;
  std::ostringstream shapes;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const cv::Mat& out = outputs[i];
    shapes << (i ? ", " : "") << outputNames_[i] << ShapeString(out);
    if (out.type() != CV_32F || !out.isContinuous()) {
      throw std::runtime_error(what + "output \"" + outputNames_[i] + "\" is not a dense float32 tensor");
    }
    if (i < spec_.scoreOutputs.size()) {
      scores += out.total();
    } else {
      if (out.total() % kRegressorSize != 0) {
        throw std::runtime_error(what + "box output \"" + outputNames_[i] + "\" " + ShapeString(out) +
                                 " is not a multiple of 16 values per anchor");
      }
      boxes += out.total() / kRegressorSize;
    }
  }
  if (scores != anchors_.size() || boxes != anchors_.size()) {
    throw std::runtime_error(what + "anchor layers give " + std::to_string(anchors_.size()) +
                             " anchors but outputs give " + std::to_string(scores) + " scores and " +
                             std::to_string(boxes) + " box rows (" + shapes.str() + ")");
  }
}

std::vector<Face> FaceDetector::Detect(const cv::Mat& bgr, const DetectOptions& options, StageTimings* timings,
                                       cv::Size full) {
  const cv::Rect whole(0, 0, bgr.cols, bgr.rows);
  if (full.empty()) full = whole.size();
  // bgr pixels -> the image's own (bgr decoded smaller): applied after NMS, which is the same at either scale.
  const float sx = static_cast<float>(full.width) / whole.width, sy = static_cast<float>(full.height) / whole.height;
  const float inf = std::numeric_limits<float>::infinity();

  // Pass list: the whole image, plus tiles when asked. Tile candidates that
  // touch an inner tile edge are cut-off faces: drop them, the overlap (or the
  // whole-image pass) sees those faces complete.
  struct Pass {
    cv::Rect region;
    cv::Rect2f keep;
  };
  std::vector<Pass> passes{{whole, cv::Rect2f(-inf, -inf, inf, inf)}};
  if (options.tiles >= 2) {
    for (const cv::Rect& tile : TileGrid(whole.size(), options.tiles)) {
      const float margin = 0.01f * std::max(tile.width, tile.height) + 1.f;
      const float l = tile.x > 0 ? tile.x + margin : -inf;
      const float t = tile.y > 0 ? tile.y + margin : -inf;
      const float r = tile.br().x < whole.width ? tile.br().x - margin : inf;
      const float b = tile.br().y < whole.height ? tile.br().y - margin : inf;
      passes.push_back({tile, cv::Rect2f(cv::Point2f(l, t), cv::Point2f(r, b))});
    }
  }

  std::vector<Candidate> candidates;
  for (const Pass& pass : passes) {
    const std::vector<Candidate> found =
        RunLetterboxed(bgr, spec_, *model_, timings,
                       [&](const std::vector<cv::Mat>& outputs, const Letterbox& box) {
                         return Postprocess(outputs, box, options.scoreThreshold, pass.keep);
                       },
                       {pass.region});
    candidates.insert(candidates.end(), found.begin(), found.end());
  }

  const auto t0 = Clock::now();
  std::vector<Face> faces;
  for (const Candidate& c : WeightedNms(std::move(candidates), options.iouThreshold)) {
    Face face;
    const auto clampX = [&](float v) {
      return static_cast<int>(std::lround(std::min<float>(std::max(v * sx, 0.f), full.width)));
    };
    const auto clampY = [&](float v) {
      return static_cast<int>(std::lround(std::min<float>(std::max(v * sy, 0.f), full.height)));
    };
    face.rect = {clampX(c.x1), clampY(c.y1), clampX(c.x2), clampY(c.y2)};
    if (face.rect[2] <= face.rect[0] || face.rect[3] <= face.rect[1]) continue;  // entirely outside
    face.score = c.score;
    face.keypoints = c.keypoints;
    for (size_t k = 0; k < face.keypoints.size(); k += 2) {
      face.keypoints[k] *= sx;
      face.keypoints[k + 1] *= sy;
    }
    faces.push_back(face);
  }
  timings->postprocessMs += MillisBetween(t0, Clock::now());
  return faces;
}

std::vector<FaceDetector::Candidate> FaceDetector::Postprocess(const std::vector<cv::Mat>& outputs,
                                                               const Letterbox& box, float scoreThreshold,
                                                               const cv::Rect2f& keep) const {
  const float size = static_cast<float>(spec_.inputSize);
  const size_t scoreCount = spec_.scoreOutputs.size();

  // Walk the box outputs in lockstep with the score outputs: both are the same
  // anchors in the same order, possibly split differently across tensors.
  size_t boxOutput = scoreCount, boxRow = 0;
  auto nextBoxRow = [&]() {
    // Counts were validated at load, so this never runs past the last output.
    while (boxRow * kRegressorSize >= outputs[boxOutput].total()) {
      ++boxOutput;
      boxRow = 0;
    }
    return reinterpret_cast<const float*>(outputs[boxOutput].data) + kRegressorSize * boxRow++;
  };
  // Normalized network-input coordinates -> original-image pixels.
  auto toImageX = [&](float normX) { return box.ToImageX(normX * size); };
  auto toImageY = [&](float normY) { return box.ToImageY(normY * size); };

  std::vector<Candidate> candidates;
  size_t anchor = 0;
  for (size_t o = 0; o < scoreCount; ++o) {
    const float* logits = reinterpret_cast<const float*>(outputs[o].data);
    const size_t count = outputs[o].total();
    for (size_t i = 0; i < count; ++i, ++anchor) {
      const float* r = nextBoxRow();
      const float score = Sigmoid(logits[i]);
      if (!(score >= scoreThreshold)) continue;
      const cv::Point2f& a = anchors_[anchor];
      // MediaPipe decoding (reverse_output_order, fixed anchor size 1):
      // offsets are in input pixels relative to the anchor centre.
      const float cx = r[0] / size + a.x;
      const float cy = r[1] / size + a.y;
      const float w = r[2] / size;
      const float h = r[3] / size;
      Candidate c;
      c.x1 = toImageX(cx - w / 2);
      c.y1 = toImageY(cy - h / 2);
      c.x2 = toImageX(cx + w / 2);
      c.y2 = toImageY(cy + h / 2);
      c.score = score;
      for (int k = 0; k < kKeypoints; ++k) {
        c.keypoints[2 * k] = toImageX(r[4 + 2 * k] / size + a.x);
        c.keypoints[2 * k + 1] = toImageY(r[5 + 2 * k] / size + a.y);
      }
      if (!(c.x2 > c.x1 && c.y2 > c.y1) || !std::isfinite(c.x1) || !std::isfinite(c.y1) || !std::isfinite(c.x2) ||
          !std::isfinite(c.y2)) {
        continue;
      }
      if (c.x1 < keep.x || c.y1 < keep.y || c.x2 > keep.x + keep.width || c.y2 > keep.y + keep.height) continue;
      candidates.push_back(c);
    }
  }
  return candidates;
}

std::vector<FaceDetector::Candidate> FaceDetector::WeightedNms(std::vector<Candidate> candidates, float iouThreshold) {
  // MediaPipe's weighted NMS: each cluster of overlapping candidates becomes one
  // detection whose box and keypoints are the score-weighted mean of the
  // cluster, scored by its best member. Steadier than picking the argmax box.
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);

  auto iou = [](const Candidate& a, const Candidate& b) {
    return Iou({a.x1, a.y1, a.x2, a.y2}, {b.x1, b.y1, b.x2, b.y2});
  };

  std::vector<Candidate> kept;
  std::vector<Candidate> rest;
  while (!candidates.empty()) {
    const Candidate top = candidates.front();
    Candidate merged{};
    float total = 0;
    rest.clear();
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      if (i == 0 || iou(top, c) > iouThreshold) {
        const float w = c.score;
        merged.x1 += w * c.x1;
        merged.y1 += w * c.y1;
        merged.x2 += w * c.x2;
        merged.y2 += w * c.y2;
        for (size_t k = 0; k < merged.keypoints.size(); ++k) merged.keypoints[k] += w * c.keypoints[k];
        total += w;
      } else {
        rest.push_back(c);
      }
    }
    if (total > 0) {
      merged.x1 /= total;
      merged.y1 /= total;
      merged.x2 /= total;
      merged.y2 /= total;
      for (float& k : merged.keypoints) k /= total;
    } else {
      merged = top;  // all-zero scores (threshold 0): nothing to weight by
    }
    merged.score = top.score;
    kept.push_back(merged);
    candidates.swap(rest);
  }
  return kept;
}

std::vector<cv::Rect> FaceDetector::TileGrid(const cv::Size& size, int tiles) {
  // N tiles per axis overlapping by kTileOverlap cover the axis exactly:
  // N*t - (N-1)*overlap*t = length.
  auto spans = [tiles](int length) {
    std::vector<std::pair<int, int>> out;
    const double tile = length / (tiles - (tiles - 1) * kTileOverlap);
    const double step = tile * (1 - kTileOverlap);
    for (int i = 0; i < tiles; ++i) {
      const int begin = static_cast<int>(std::lround(i * step));
      const int end = (i == tiles - 1) ? length : std::min(length, static_cast<int>(std::lround(i * step + tile)));
      if (end > begin) out.emplace_back(begin, end);
    }
    return out;
  };
  std::vector<cv::Rect> grid;
  for (const auto& [y0, y1] : spans(size.height)) {
    for (const auto& [x0, x1] : spans(size.width)) grid.emplace_back(x0, y0, x1 - x0, y1 - y0);
  }
  return grid;
}

}  // namespace edgecv
