#include "runtime/gpu_sessions.h"

#include <cstdio>

namespace edgecv {

void GpuSessions::MarkLost(const std::string& path, const std::string& why) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!lost_.emplace(path, why.empty() ? "GPU run failed" : why).second) return;
    anyLost_.store(true, std::memory_order_release);
  }
  // The host's log has no hook into the workers: one line on stderr, as onnxruntime's own errors go.
  std::fprintf(stderr, "edgecv: the GPU failed running %s (%s); this net runs on the CPU from now on\n", path.c_str(),
               why.c_str());
}

std::string GpuSessions::LostReason(const std::string& path) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto found = lost_.find(path);
  return found == lost_.end() ? std::string() : found->second;
}

}  // namespace edgecv
