// Per-stage durations of one detection call, filled by every model class.
#pragma once

namespace edgecv {

struct StageTimings {
  double preprocessMs = 0;
  double inferenceMs = 0;
  double postprocessMs = 0;
};

}  // namespace edgecv
