// Which input shapes a session has run at, and the engine's count of cold runs: runs a request paid for a shape
// its session had not been warmed at. onnxruntime plans a session's memory per input shape (the first run at a
// shape records the plan, the second allocates its block, both slower than later runs), so the engine warms every
// session at every shape its model can see before it says it is ready (models/*: WarmShape, jobs/warm_up.h), and
// a cold run after that is a shape the warm-up missed (docs/performance.md, "The first request").
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace edgecv {

// Engine-wide: shared by every worker's models through RuntimeOptions.
class ColdRuns {
 public:
  // The engine has finished loading and warming: cold runs from now on are counted.
  void LoadingDone() { loading_.store(false, std::memory_order_relaxed); }
  bool loading() const { return loading_.load(std::memory_order_relaxed); }
  void Count() {
    if (!loading()) cold_.fetch_add(1, std::memory_order_relaxed);
  }
  // Cold runs since loading ended (cumulative).
  uint64_t count() const { return cold_.load(std::memory_order_relaxed); }

  // Warm-up runs at load (from the workers' threads at once), and the warm-up's wall time, for the start-up log.
  void AddWarmUpRuns(int runs) {
    const std::lock_guard<std::mutex> lock(mutex_);
    warmRuns_ += runs;
  }
  void SetWarmUpMs(double ms) {
    const std::lock_guard<std::mutex> lock(mutex_);
    warmMs_ = ms;
  }
  struct WarmUp {
    int runs = 0;
    double ms = 0;
  };
  WarmUp warmUp() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return {warmRuns_, warmMs_};
  }

 private:
  std::atomic<bool> loading_{true};
  std::atomic<uint64_t> cold_{0};
  mutable std::mutex mutex_;
  int warmRuns_ = 0;
  double warmMs_ = 0;
};

// One session's runs by input shape. Not thread-safe: a worker's own session is run by that worker only; the
// engine's wide session is guarded by its owner (onnxruntime_model.cc).
class ShapeRuns {
 public:
  // `warmAfter`: runs at a shape after which it is warm (2 with onnxruntime's memory plan, 1 without).
  explicit ShapeRuns(int warmAfter) : warmAfter_(warmAfter) {}
  // True when `shape` is not warm yet in this session.
  bool Cold(const std::vector<int64_t>& shape) const {
    const auto it = runs_.find(shape);
    return it == runs_.end() || it->second < warmAfter_;
  }
  // Records one run at `shape`; returns whether it was cold.
  bool Record(const std::vector<int64_t>& shape) {
    int& n = runs_[shape];
    return n++ < warmAfter_;
  }

 private:
  int warmAfter_;
  std::map<std::vector<int64_t>, int> runs_;
};

}  // namespace edgecv
