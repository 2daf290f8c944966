// Lends idle cores to a job that is alone in its engine. Each worker runs its onnxruntime models with its own
// threads (threadsPerWorker), which is what keeps workers from fighting over cores under load. When only one
// job is in the engine (nothing else queued or running), the other workers' cores sit idle: the job then runs
// its next inference on a "wide" session of the same model with one thread per usable CPU: a lone pass is faster,
// while two jobs at once keep their per-worker throughput (docs/performance.md, "Idle cores are lent to a lone
// request").
//
// One wide session per model file for the whole engine, not per worker: at most one job borrows the idle cores
// at a time, so one copy of the weights (and of its threads) serves every worker.
//
// Short runs (under kMinLentRunMs on the worker's own threads, at their fastest) are lent only while the host
// says it is serving that one request (SetHostRequests(1)). A lent run hands work to the pool op by op, and the
// pool's threads spin between ops, on the core the event loop serves HTTP with: lending a short run whenever its
// job is alone in the engine costs throughput under load, because with other requests in flight the "idle" core is
// doing their TLS and JSON. With the host's count a lone request gets both cores and concurrent requests keep their
// throughput. Long runs gain more than the event loop loses and are lent whenever their job is alone.
// docs/performance.md, "Idle cores are lent to a lone request", has the figures.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/sessions_by_file.h"

namespace edgecv {

// The shortest run (a model's fastest on the worker's own threads) that is lent the idle cores whatever the host
// is doing; shorter ones only while the host serves their request alone.
constexpr double kMinLentRunMs = 10.0;

class IdleCores {
 public:
  IdleCores() = default;
  IdleCores(const IdleCores&) = delete;
  IdleCores& operator=(const IdleCores&) = delete;

  // Worker pool: a job was admitted / has finished running.
  void JobAdmitted() { jobs_.fetch_add(1, std::memory_order_relaxed); }
  void JobFinished() { jobs_.fetch_sub(1, std::memory_order_relaxed); }
  // Worker pool: jobs dropped without running.
  void JobsDropped(int n) { jobs_.fetch_sub(n, std::memory_order_relaxed); }

  // The host (edgecv's HTTP server) serving `n` requests now; until it first says so, -1 (a library user).
  void SetHostRequests(int n) { hostRequests_.store(n, std::memory_order_relaxed); }

  // A model, before one inference: true when the caller's job is the only one in the engine, no other run holds
  // the wide pool and, for a short run, the host serves one request; the caller then runs wide and calls Return().
  bool Borrow(bool shortRun) {
    if (jobs_.load(std::memory_order_relaxed) != 1) return false;
    if (shortRun && hostRequests_.load(std::memory_order_relaxed) != 1) return false;
    if (lent_.exchange(true, std::memory_order_acquire)) return false;
    borrowed_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  void Return() { lent_.store(false, std::memory_order_release); }

  // Inferences that ran on the wide pool (cumulative).
  uint64_t borrowed() const { return borrowed_.load(std::memory_order_relaxed); }

  // The engine's one wide session for `key` (the model file; outputs are chosen per run), made by `make` on first
  // use.
  template <class T>
  std::shared_ptr<T> Session(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
    return sessions_.Get<T>(key, make);
  }

 private:
  std::atomic<int> jobs_{0};
  std::atomic<bool> lent_{false};
  std::atomic<int> hostRequests_{-1};
  std::atomic<uint64_t> borrowed_{0};
  SessionsByFile sessions_;
};

}  // namespace edgecv
