// A GPU net's session on onnxruntime's WebGPU provider (runtime/gpu_sessions.h), for onnxruntime_model.cc. Only
// built with the onnxruntime headers.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/onnxruntime_api.h"
#include "runtime/shape_runs.h"

#if EDGECV_WITH_ONNXRUNTIME
namespace edgecv {

// One GPU call at a time in the whole process. onnxruntime's WebGPU provider records every session's work on one
// shared device context (its default one), which is not safe to use from two threads at once: two nets run side
// by side failed with "CommandEncoder is already finished", then a double free (measured on lavapipe). Making and
// releasing a session go through that context too, so they wait here as well.
std::mutex& GpuQueue();

// The engine's one GPU session of a file, shared by every worker's model of that file.
struct GpuSession {
  GpuSession(Ort::Session s, int warmAfter) : session(std::move(s)), runs(warmAfter) {}
  ~GpuSession();
  GpuSession(const GpuSession&) = delete;
  GpuSession& operator=(const GpuSession&) = delete;
  Ort::Session session;
  ShapeRuns runs;                  // guarded by GpuQueue()
  std::vector<int64_t> inputDims;  // the graph's input shape, -1 where open

  // True when `shape` fits the graph's input. A run at a shape that does not fails on any device: it must not be
  // taken for the GPU failing (the CPU session then gives the caller its error).
  bool Takes(const std::vector<int64_t>& shape) const;
};

// A session of the file on the WebGPU provider. Nodes the provider has no kernel for run on the CPU provider, on
// one thread (the GPU session serves one run at a time). `openInput`: its memory plan as the CPU sessions'.
// `fusions`: onnxruntime's extended optimizations on (ORT_ENABLE_ALL), or its basic ones only.
std::shared_ptr<GpuSession> MakeGpuSession(const std::string& path, bool openInput, bool fusions);

}  // namespace edgecv
#endif
