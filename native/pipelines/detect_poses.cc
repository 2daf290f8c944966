#include "pipelines/detect_poses.h"

#include <algorithm>

#include "pool/worker_context.h"
#include "runtime/error_code.h"

namespace edgecv {
namespace {

// Objects asked of the detector when looking for people: a bound on its work, not a policy (the people among
// them are capped by maxPoses).
constexpr int kMaxPersonObjects = 1000;

// The person detector's and MoveNet's stages, each model's apart (timings.stages), and their sums in *timings.
void AddPoseStages(const StageTimings& person, const StageTimings& pose, StageTimings* timings) {
  timings->preprocessMs += person.preprocessMs + pose.preprocessMs;
  timings->inferenceMs += person.inferenceMs + pose.inferenceMs;
  timings->postprocessMs += person.postprocessMs + pose.postprocessMs;
  timings->runs += person.runs + pose.runs;
  timings->parts = {{"personPreprocessMs", person.preprocessMs},   {"personInferenceMs", person.inferenceMs},
                    {"personPostprocessMs", person.postprocessMs}, {"posePreprocessMs", pose.preprocessMs},
                    {"poseInferenceMs", pose.inferenceMs},         {"posePostprocessMs", pose.postprocessMs},
                    {"posePasses", static_cast<double>(pose.runs)}};
}

// The people's boxes, best first, as the detectors return them.
std::vector<Box> FindPeople(ObjectDetector& finder, const cv::Mat& image, const PoseOptions& options,
                            StageTimings* timings) {
  ObjectOptions find;
  find.scoreThreshold = options.personThreshold;
  find.maxObjects = kMaxPersonObjects;
  std::vector<Box> people;
  for (const DetectedObject& o : finder.Detect(image, find, timings)) {
    if (o.classId == options.personClassId && people.size() < static_cast<size_t>(options.maxPoses))
      people.push_back(o.rect);
  }
  return people;
}

void ScaleBox(Box& b, float sx, float sy) { b = {b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy}; }

// Poses found in a copy of size `from` into the pixels of the same image at size `to`.
void Rescale(std::vector<Pose>& poses, cv::Size from, cv::Size to) {
  if (from == to) return;
  const float sx = static_cast<float>(to.width) / from.width, sy = static_cast<float>(to.height) / from.height;
  for (Pose& p : poses) {
    ScaleBox(p.box, sx, sy);
    for (Keypoint& k : p.keypoints) {
      k.x *= sx;
      k.y *= sy;
    }
  }
}

}  // namespace

std::vector<Pose> DetectPoses(WorkerContext& ctx, const ImageDecoder& decode, const PoseOptions& options,
                              StageTimings* timings) {
  if (!ctx.poseEstimator) throw JobError(ErrorCode::kInternal, "engine has no pose model");
  PoseEstimator& movenet = *ctx.poseEstimator;
  ObjectDetector* finder = ctx.personDetector ? ctx.personDetector.get() : ctx.objectDetector.get();
  StageTimings person, pose;
  std::vector<Pose> poses;
  if (options.personClassId < 0 || !finder) {
    // Decoded whole: at half size, the whole-image pass posed a dog in dlib's dogs.jpg (int8; 900x916).
    poses = movenet.Detect(decode(0, nullptr), options, &pose);
  } else {
    cv::Size full;
    cv::Mat image = decode(finder->InputSide(), &full);
    std::vector<Box> people = FindPeople(*finder, image, options, &person);
    const int sideForCrops = movenet.SideForCrops(people, image.size());
    if (image.size() != full && sideForCrops > std::max(image.cols, image.rows)) {
      const cv::Mat larger = decode(sideForCrops, nullptr);
      const float sx = static_cast<float>(larger.cols) / image.cols, sy = static_cast<float>(larger.rows) / image.rows;
      for (Box& b : people) ScaleBox(b, sx, sy);
      image = larger;
    }
    poses = movenet.DetectInBoxes(image, people, options, &pose);
    Rescale(poses, image.size(), full);
  }
  AddPoseStages(person, pose, timings);
  return poses;
}

}  // namespace edgecv
