// A request's whole path, run once on each worker at load on a made-up photo: JPEG decoding, letterbox, the pose
// crops and the decoding of outputs. The models are warm at every input shape already (runtime/shape_runs.h); this
// is the rest a first request would pay for: OpenCV's and the allocator's first use of each path (docs/performance.md,
// "The first request").
#pragma once

#include <memory>
#include <vector>

#include "pool/worker_context.h"

namespace edgecv {

// Warms every model of `ctx` at the input shapes beyond its square (ObjectDetector::WarmShapes), then runs each
// through its route's path once. Throws what the models throw (a model that loaded and warmed up does not).
void WarmUp(WorkerContext& ctx);

// WarmUp() of every context, each on a thread of its own (so the workers' copies warm side by side, as they will
// run), back when all are done. Rethrows the first error. Returns the wall time in ms.
double WarmUpAll(const std::vector<std::unique_ptr<WorkerContext>>& contexts);

}  // namespace edgecv
