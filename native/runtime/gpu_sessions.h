// The engine's nets on the GPU (onnxruntime's WebGPU execution provider). One session per net for the whole engine,
// shared by every worker: a worker decodes, letterboxes and decodes outputs on its own thread, and only the forward
// pass waits its turn at the GPU (one run at a time per net; the device's own queue orders the nets). One set of
// weights on the device whatever the worker count keeps its memory bounded.
//
// A GPU run that fails (device lost, out of memory, a driver error) moves that net to the CPU for the rest of the
// engine's life: the failing request and every later one run the same file on the worker's CPU session, and the
// first failure is logged and kept for the backend report. Nothing is lost and no request hangs on a broken device.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "runtime/sessions_by_file.h"

namespace edgecv {

class GpuSessions {
 public:
  SessionsByFile sessions;

  // A run of `path` failed on the GPU: from now on it runs on the CPU. Logs the first failure of each file.
  void MarkLost(const std::string& path, const std::string& why);
  // Why `path` left the GPU at run time; empty while it still runs there.
  std::string LostReason(const std::string& path) const;
  // Asked before every GPU run: no lock and no copy until some net has failed.
  bool Lost(const std::string& path) const {
    return anyLost_.load(std::memory_order_acquire) && !LostReason(path).empty();
  }

  void CountRun(bool onGpu) { (onGpu ? gpuRuns_ : cpuRuns_).fetch_add(1, std::memory_order_relaxed); }
  // Forward passes of GPU nets that ran on the GPU, and on the CPU after a failure (cumulative).
  uint64_t gpuRuns() const { return gpuRuns_.load(std::memory_order_relaxed); }
  uint64_t cpuRuns() const { return cpuRuns_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string> lost_;
  std::atomic<bool> anyLost_{false};
  std::atomic<uint64_t> gpuRuns_{0};
  std::atomic<uint64_t> cpuRuns_{0};
};

}  // namespace edgecv
