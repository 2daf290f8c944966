#include "jobs/warm_up.h"

#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include "image/image.h"
#include "image/jpeg_encoder.h"
#include "runtime/stage_timings.h"

namespace edgecv {
namespace {

// A camera frame's size (the demo page's, the benches'), in smooth colours so the JPEG decoder does real work.
cv::Mat MadeUpPhoto() {
  cv::Mat bgr(480, 640, CV_8UC3);
  for (int y = 0; y < bgr.rows; ++y) {
    for (int x = 0; x < bgr.cols; ++x) bgr.at<cv::Vec3b>(y, x) = cv::Vec3b(x * 7 + y * 3, x * 2 + y * 5, x ^ y);
  }
  return bgr;
}

// A made-up photo through every route's path.
void WarmPipelines(WorkerContext& ctx) {
  const std::vector<uint8_t> jpeg = EncodeJpeg(MadeUpPhoto());
  cv::Size full;
  const cv::Mat image = DecodeBgr(jpeg.data(), jpeg.size(), 0, &full);
  StageTimings timings;  // not reported
  if (ctx.faceDetector) {
    DetectOptions face;
    face.scoreThreshold = 0.5f;
    face.iouThreshold = 0.3f;
    // Decoded as detectFaces decodes: no larger than the detector needs (jobs/detect_job.cc).
    const cv::Mat small = DecodeBgr(jpeg.data(), jpeg.size(), ctx.faceDetector->NeededSide(face), &full);
    ctx.faceDetector->Detect(small, face, &timings, full);
  }
  ObjectOptions objects;
  objects.scoreThreshold = 0.5f;
  objects.maxObjects = 100;
  if (ctx.objectDetector) ctx.objectDetector->Detect(image, objects, &timings);
  if (ctx.personDetector) ctx.personDetector->Detect(image, objects, &timings);
  if (ctx.poseEstimator) {
    PoseOptions pose;
    pose.scoreThreshold = 0.2f;
    pose.maxPoses = 6;
    ctx.poseEstimator->Detect(image, pose, &timings);
    // A person's box: the top-down path's crop, letterboxed to the model's square.
    ctx.poseEstimator->DetectInBoxes(image, {Box{240, 60, 400, 420}}, pose, &timings);
  }
}

}  // namespace

void WarmUp(WorkerContext& ctx) {
  if (ctx.objectDetector) ctx.objectDetector->WarmShapes();
  if (ctx.personDetector) ctx.personDetector->WarmShapes();
  WarmPipelines(ctx);
}

double WarmUpAll(const std::vector<std::unique_ptr<WorkerContext>>& contexts) {
  const Clock::time_point start = Clock::now();
  std::vector<std::exception_ptr> errors(contexts.size());
  std::vector<std::thread> threads;
  threads.reserve(contexts.size());
  for (size_t i = 0; i < contexts.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        WarmUp(*contexts[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return MillisBetween(start, Clock::now());
}

}  // namespace edgecv
