// A cv::MatAllocator that keeps freed buffers for the next Mat of the same size instead of giving them back to
// the C library. A request's large buffers (the decoded photo, the letterboxed input blob, the model outputs)
// are the same few sizes call after call (1.5-8.6 MB for the scene models' outputs), and a fresh allocation of
// that size comes back from glibc as pages the kernel must fault in and zero again. Measured on the reference
// machine: 90-190 page faults a forward pass for the scene models, where onnxruntime-node (outputs in
// onnxruntime's own arena) took 4-34, and 2,669 a call of the object route. A recycled buffer's pages are
// already mapped.
//
// Thread-safe: a Mat may be released on any thread (a Float32Array handed to JS is freed by the garbage
// collector on the JS thread). The allocator lives for the whole process, so a Mat may outlive every engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

namespace edgecv {

struct RecycledBufferStats {
  uint64_t allocated = 0;  // buffers taken from the C library (cumulative)
  uint64_t reused = 0;     // buffers handed out again (cumulative)
  size_t idleBytes = 0;    // bytes kept for reuse now
};

// Idle buffers kept at most, in bytes all together: above it a freed buffer goes back to the C library.
constexpr size_t kMaxIdleRecycledBytes = size_t{64} << 20;

// The process-wide allocator; set it as a Mat's `allocator` before create().
cv::MatAllocator* RecyclingAllocator();
// An empty Mat whose create() (OpenCV functions writing into it call it) takes its buffer from
// RecyclingAllocator().
cv::Mat RecyclingMat();
// A Mat of `shape` (CV_32F) whose buffer comes from RecyclingAllocator(); its contents are undefined.
cv::Mat RecycledFloatMat(const std::vector<int>& shape);
RecycledBufferStats RecycledBuffers();

}  // namespace edgecv
