// A request's whole path, run once on each worker at load on a made-up photo: JPEG decoding, letterbox, the pose
// crops and the decoding of outputs. The models are warm at every input shape already (runtime/shape_runs.h); this
// is the rest a first request would pay for: OpenCV's and the allocator's first use of each path (docs/performance.md,
// "The first request").
#pragma once

#include "runtime/worker_context.h"

namespace edgecv {

// Runs every model of `ctx` through its route's path once. Throws what the models throw (a model that loaded and
// warmed up does not).
void WarmPipelines(WorkerContext& ctx);

}  // namespace edgecv
