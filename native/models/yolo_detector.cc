#include "models/yolo_detector.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/box.h"
#include "runtime/inference_model.h"

namespace edgecv {
namespace {

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// A box before NMS, corners in input pixels.
struct Candidate {
  Box box;
  float score;
  int classId;
};

// Takes the best class of one row (objectness at [4], class scores from [5]); false when below threshold.
bool ScoreRow(const float* row, int classes, bool logits, float threshold, float* score, int* classId) {
  const float obj = logits ? Sigmoid(row[4]) : row[4];
  if (obj < threshold) return false;  // score <= obj: most rows end here
  int best = 0;
  for (int c = 1; c < classes; ++c)
    if (row[5 + c] > row[5 + best]) best = c;
  const float cls = logits ? Sigmoid(row[5 + best]) : row[5 + best];
  *score = obj * cls;
  *classId = best;
  return *score >= threshold;
}

}  // namespace

YoloDetector::YoloDetector(const YoloDetectorSpec& spec, const RuntimeOptions& runtime) : spec_(spec) {
  const std::string what = "object model " + spec_.model.path + ": ";
  if (spec_.inputSize < 32 || spec_.inputSize % 32 != 0)
    throw std::runtime_error(what + "inputSize must be a multiple of 32");
  if (spec_.classes <= 0) throw std::runtime_error(what + "classes must be positive");
  const bool decoded = spec_.layout == YoloDetectorSpec::Layout::kDecoded;
  if (!decoded && (spec_.outputs.empty() || spec_.strides.size() != spec_.outputs.size() ||
                   spec_.anchors.size() != spec_.outputs.size())) {
    throw std::runtime_error(what + "the grid layout needs one stride and one anchor list per output");
  }
  if (decoded && spec_.openInputSize)
    throw std::runtime_error(what + "only the grid layout can take an open input size");
  if (spec_.openInputSize && spec_.model.runtime == RuntimeKind::kOnnxRuntime) {
    roundTo_ = *std::max_element(spec_.strides.begin(), spec_.strides.end());
  }
  for (size_t i = 0; !decoded && i < spec_.strides.size(); ++i) {
    if (spec_.strides[i] <= 0 || spec_.inputSize % spec_.strides[i] != 0 || spec_.anchors[i].size() < 2) {
      throw std::runtime_error(what + "each stride must divide inputSize and have at least one anchor");
    }
  }
  spec_.model.openInput = roundTo_ > 0;
  model_ = LoadInferenceModel(spec_.model, spec_.outputs, runtime, what);
  // An operator's own export: its one output, whatever the exporter named it.
  spec_.outputs = model_->outputNames();
  if (decoded && spec_.outputs.size() != 1) {
    throw std::runtime_error(what + "has " + std::to_string(spec_.outputs.size()) +
                             " outputs, expected one [1,N,5+classes] output (YOLOv5 layout)");
  }
  const std::vector<cv::Mat> outputs = WarmUp(*model_, spec_.inputSize, what);
  CheckOutputs(outputs, what);
  if (decoded) {
    // TF exports of YOLOv5 give boxes in 0..1 of the input, PyTorch's ONNX export in input pixels. Each row is
    // one anchor of one grid cell, so the row centres span the whole input whatever the image: the largest of
    // them in the warm-up pass says which unit this file uses.
    const cv::Mat& m = outputs[0];
    const int row = 5 + spec_.classes;
    const float* data = m.ptr<float>();
    float extent = 0;
    for (int k = 0; k < m.size[1]; ++k) extent = std::max({extent, data[k * row], data[k * row + 1]});
    boxUnit_ = extent <= 2.0f ? static_cast<float>(spec_.inputSize) : 1.0f;
  }
}

void YoloDetector::WarmShapes() {
  // With an open input size a photo runs at its own aspect: the fitted side is the square's, the other one a
  // multiple of roundTo_ (LetterboxBlob). Every shape warmed costs a run in every session at start, so only the
  // aspects cameras give are, both ways; such a session runs without onnxruntime's per-shape memory plan, so another
  // aspect's first run is an ordinary one (docs/performance.md, "The first request", has the start-up times).
  constexpr double kCameraAspects[] = {4.0 / 3.0, 16.0 / 9.0, 3.0 / 2.0};
  if (roundTo_ <= 0) return;
  for (const double aspect : kCameraAspects) {
    const int fitted = static_cast<int>(std::lround(spec_.inputSize / aspect));
    const int side = (fitted + roundTo_ - 1) / roundTo_ * roundTo_;
    model_->WarmShape({1, 3, spec_.inputSize, side});
    model_->WarmShape({1, 3, side, spec_.inputSize});
  }
}

void YoloDetector::CheckOutputs(const std::vector<cv::Mat>& outputs, const std::string& what) const {
  const int row = 5 + spec_.classes;
  if (spec_.layout == YoloDetectorSpec::Layout::kDecoded) {
    const cv::Mat& m = outputs[0];
    if (m.type() != CV_32F || m.dims != 3 || m.size[0] != 1 || m.size[2] != row) {
      const std::string got = m.dims == 3 && m.size[2] > 5 ? " (" + std::to_string(m.size[2] - 5) + " classes)" : "";
      throw std::runtime_error(what + "output is " + ShapeString(m) + got + ", expected [1,N," + std::to_string(row) +
                               "] for " + std::to_string(spec_.classes) +
                               " labels (YOLOv5 layout: cx, cy, w, h, "
                               "objectness, one score per class)");
    }
    return;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const int cells = spec_.inputSize / spec_.strides[i];
    const int anchors = static_cast<int>(spec_.anchors[i].size() / 2);
    if (!IsNhwc(outputs[i], cells, cells, anchors * row)) {
      throw std::runtime_error(what + "output " + spec_.outputs[i] + " is " + ShapeString(outputs[i]) +
                               ", expected [1," + std::to_string(cells) + "," + std::to_string(cells) + "," +
                               std::to_string(anchors * row) + "]");
    }
  }
}

std::vector<DetectedObject> YoloDetector::Detect(const cv::Mat& bgr, const ObjectOptions& options,
                                                 StageTimings* timings) {
  return RunLetterboxed(
      bgr, spec_, *model_, timings,
      [&](const std::vector<cv::Mat>& outputs, const Letterbox& box) { return Postprocess(outputs, box, options); },
      {cv::Rect(), spec_.padValue, roundTo_});
}

std::vector<DetectedObject> YoloDetector::Postprocess(const std::vector<cv::Mat>& outputs, const Letterbox& box,
                                                      const ObjectOptions& options) const {
  const int classes = spec_.classes;
  const int row = 5 + classes;
  const float threshold = options.scoreThreshold;
  std::vector<Candidate> candidates;
  float score = 0;
  int classId = 0;
  if (spec_.layout == YoloDetectorSpec::Layout::kGrid) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      const float* data = outputs[i].ptr<float>();
      const int stride = spec_.strides[i];
      const int rows = outputs[i].size[1], cols = outputs[i].size[2];  // the input's size / stride ([1,H,W,A*row])
      const int anchors = static_cast<int>(spec_.anchors[i].size() / 2);
      for (int gy = 0; gy < rows; ++gy) {
        for (int gx = 0; gx < cols; ++gx) {
          for (int a = 0; a < anchors; ++a) {
            const float* p = data + ((gy * cols + gx) * anchors + a) * row;
            if (!ScoreRow(p, classes, true, threshold, &score, &classId)) continue;
            // YOLOv5 v6: xy = (2 sigmoid - 0.5 + grid) * stride, wh = (2 sigmoid)^2 * anchor
            const float cx = (Sigmoid(p[0]) * 2 - 0.5f + gx) * stride;
            const float cy = (Sigmoid(p[1]) * 2 - 0.5f + gy) * stride;
            const float sw = Sigmoid(p[2]) * 2, sh = Sigmoid(p[3]) * 2;
            const float w = sw * sw * spec_.anchors[i][2 * a], h = sh * sh * spec_.anchors[i][2 * a + 1];
            candidates.push_back({{cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2}, score, classId});
          }
        }
      }
    }
  } else {
    const cv::Mat& m = outputs[0];
    const int n = m.size[1];
    const float* data = m.ptr<float>();
    const float unit = boxUnit_;
    for (int k = 0; k < n; ++k) {
      const float* p = data + k * row;
      if (!ScoreRow(p, classes, false, threshold, &score, &classId)) continue;
      const float cx = p[0] * unit, cy = p[1] * unit, w = p[2] * unit, h = p[3] * unit;
      candidates.push_back({{cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2}, score, classId});
    }
  }

  // Class-aware greedy NMS, best first.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  std::vector<Candidate> kept;
  for (const Candidate& c : candidates) {
    if (kept.size() >= static_cast<size_t>(options.maxObjects)) break;
    bool suppressed = false;
    for (const Candidate& k : kept) {
      if (k.classId == c.classId && Iou(k.box, c.box) > spec_.iouThreshold) {
        suppressed = true;
        break;
      }
    }
    if (!suppressed) kept.push_back(c);
  }
  std::vector<DetectedObject> objects;
  objects.reserve(kept.size());
  for (const Candidate& c : kept) {
    DetectedObject o;
    o.rect = {box.ToImageX(c.box[0]), box.ToImageY(c.box[1]), box.ToImageX(c.box[2]), box.ToImageY(c.box[3])};
    o.classId = c.classId;
    o.score = c.score;
    objects.push_back(o);
  }
  return objects;
}

}  // namespace edgecv
