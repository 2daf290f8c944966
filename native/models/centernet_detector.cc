#include "models/centernet_detector.h"

#include <algorithm>
#include <stdexcept>

#include "runtime/inference_model.h"

namespace edgecv {
namespace {

constexpr int kStride = 4;  // input pixels per heatmap cell

}  // namespace

CenterNetDetector::CenterNetDetector(const CenterNetDetectorSpec& spec, const RuntimeOptions& runtime) : spec_(spec) {
  const std::string what = "object model " + spec_.model.path + ": ";
  if (spec_.inputSize < 32 || spec_.inputSize % kStride != 0)
    throw std::runtime_error(what + "inputSize must be a multiple of 4");
  if (spec_.classes <= 0) throw std::runtime_error(what + "classes must be positive");
  model_ = LoadInferenceModel(spec_.model, {spec_.heatmapOutput, spec_.boxOutput}, runtime, what);
  grid_ = spec_.inputSize / kStride;

  const std::vector<cv::Mat> outputs = WarmUp(*model_, spec_.inputSize, what);
  if (!IsNhwc(outputs[0], grid_, grid_, spec_.classes) || !IsNhwc(outputs[1], grid_, grid_, 4)) {
    throw std::runtime_error(what + "outputs are " + ShapeString(outputs[0]) + " and " + ShapeString(outputs[1]) +
                             ", expected [1," + std::to_string(grid_) + "," + std::to_string(grid_) + "," +
                             std::to_string(spec_.classes) + "] and [1," + std::to_string(grid_) + "," +
                             std::to_string(grid_) + ",4]");
  }
}

std::vector<DetectedObject> CenterNetDetector::Detect(const cv::Mat& bgr, const ObjectOptions& options,
                                                      StageTimings* timings) {
  return RunLetterboxed(bgr, spec_, *model_, timings, [&](const std::vector<cv::Mat>& outputs, const Letterbox& box) {
    return Postprocess(outputs, box, options);
  });
}

std::vector<DetectedObject> CenterNetDetector::Postprocess(const std::vector<cv::Mat>& outputs, const Letterbox& box,
                                                           const ObjectOptions& options) const {
  const int g = grid_;
  const int classes = spec_.classes;
  const float* heat = outputs[0].ptr<float>();
  const float* sides = outputs[1].ptr<float>();
  auto at = [&](int y, int x, int c) { return heat[(y * g + x) * classes + c]; };

  // A detection is a cell whose score equals the max of its 3x3 window in the same class (the
  // graph's MaxPool + Equal), above the threshold. Checking the threshold first skips almost every cell.
  struct Peak {
    float score;
    int index;  // (cell * classes + class): the graph's flat order, for its tie-break
  };
  std::vector<Peak> peaks;
  for (int y = 0; y < g; ++y) {
    for (int x = 0; x < g; ++x) {
      for (int c = 0; c < classes; ++c) {
        const float v = at(y, x, c);
        if (!(v >= options.scoreThreshold) || v <= 0) continue;
        bool peak = true;
        for (int yy = std::max(0, y - 1); peak && yy <= std::min(g - 1, y + 1); ++yy) {
          for (int xx = std::max(0, x - 1); xx <= std::min(g - 1, x + 1); ++xx) {
            if (at(yy, xx, c) > v) {
              peak = false;
              break;
            }
          }
        }
        if (peak) peaks.push_back({v, (y * g + x) * classes + c});
      }
    }
  }
  std::sort(peaks.begin(), peaks.end(),
            [](const Peak& a, const Peak& b) { return a.score != b.score ? a.score > b.score : a.index < b.index; });
  if (peaks.size() > static_cast<size_t>(options.maxObjects)) peaks.resize(options.maxObjects);

  std::vector<DetectedObject> objects;
  objects.reserve(peaks.size());
  for (const Peak& p : peaks) {
    const int cell = p.index / classes;
    const float cx = static_cast<float>(cell % g * kStride), cy = static_cast<float>(cell / g * kStride);
    const float* d = sides + cell * 4;  // left, top, right, bottom distances from the cell corner
    DetectedObject o;
    o.rect = {box.ToImageX(cx - d[0]), box.ToImageY(cy - d[1]), box.ToImageX(cx + d[2]), box.ToImageY(cy + d[3])};
    o.classId = p.index % classes;
    o.score = p.score;
    objects.push_back(o);
  }
  return objects;
}

}  // namespace edgecv
