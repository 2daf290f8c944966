// The pose route's work on a worker: people found by the person detector, each posed by MoveNet in a crop around
// them (top-down), or one whole-image MoveNet pass.
#pragma once

#include <vector>

#include "jobs/image_job.h"
#include "models/pose_estimator.h"
#include "runtime/stage_timings.h"

namespace edgecv {

struct WorkerContext;

// Poses in the image's own pixels, best first. Top-down, a JPEG is decoded only as large as the person detector
// needs (libjpeg's DCT scaling, a shrink as good as an area filter), and decoded again larger only when a person's
// crop would have fewer pixels than MoveNet's input: no crop is blown up from the smaller decode. Large people in
// large frames gain most (docs/performance.md, "The pose route, stage by stage"); where every person is small, the
// JPEG is decoded twice. The whole-image pass decodes whole.
// timings->parts: each model's stages apart.
std::vector<Pose> DetectPoses(WorkerContext& ctx, const ImageDecoder& decode, const PoseOptions& options,
                              StageTimings* timings);

}  // namespace edgecv
