// Nearest-neighbour upsampling by whole factors of an NHWC uint8 tensor: each pixel's channels copied fy x fx
// times. An int8 YOLOv5 graph upsamples twice (x2, nearest) with onnxruntime's generic Resize, which works out
// a source index per byte; as rows of memcpy it is a small fraction of that (docs/int8.md, "edgecv's own int8
// operators"). ops/int8_graph_fusion.h puts it in the graph where Resize's result is exactly a copy.
#pragma once

#include <cstdint>

namespace edgecv {

// in [n, h, w, c] -> out [n, h * fy, w * fx, c].
void UpsampleNearest(const uint8_t* in, int64_t n, int64_t h, int64_t w, int64_t c, int fy, int fx, uint8_t* out);

}  // namespace edgecv

#if EDGECV_WITH_ONNXRUNTIME
#include "runtime/onnxruntime_api.h"

namespace edgecv {

// The operator (ops/edgecv_ops.h): input x (uint8 NHWC), output y (uint8); attribute "factors" [fy, fx],
// or "sizes" [n, h * fy, w * fx, c] for an input whose shape the graph fixes (Resize's scales or sizes).
const OrtCustomOp* NearestUpsampleOp();

}  // namespace edgecv
#endif
