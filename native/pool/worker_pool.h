// The addon's own thread pool (deliberately not libuv's: inference jobs take tens
// of milliseconds and would starve fs/dns/crypto work on the 4 libuv threads).
//
// One bounded FIFO queue feeds N workers. Admission never blocks the JS thread:
// when `queueLimit` jobs are already waiting, Submit() refuses at once (the
// caller rejects with OVERLOADED) instead of letting latency pile up.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/idle_cores.h"
#include "pool/job.h"
#include "pool/worker_context.h"

namespace edgecv {

class WorkerPool {
 public:
  struct Stats {
    uint64_t queued = 0;     // waiting now
    uint64_t running = 0;    // executing now
    uint64_t completed = 0;  // finished successfully (cumulative)
    uint64_t failed = 0;     // finished with an error (cumulative)
    uint64_t rejected = 0;   // refused at submit: OVERLOADED or CLOSED (cumulative)
  };
  enum class Admission { kAccepted, kOverloaded, kClosed };
  // Called on the worker thread with each finished job; must not block for long.
  using Completion = std::function<void(std::unique_ptr<Job>)>;

  // cv::setNumThreads(threadsPerWorker) is called here. OpenCV's thread count is
  // process-wide, not per thread: every worker's parallel regions share one
  // OpenCV/TBB pool, so total compute threads ~= workers x threadsPerWorker.
  // `idleCores` (may be null) is told of every job admitted and finished.
  WorkerPool(std::vector<std::unique_ptr<WorkerContext>> contexts, int threadsPerWorker, size_t queueLimit,
             std::shared_ptr<IdleCores> idleCores, Completion onDone);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Moves `job` into the queue on kAccepted; leaves it with the caller otherwise.
  Admission Submit(std::unique_ptr<Job>& job);
  // Stop admitting; workers finish everything already queued, then exit.
  void Drain();
  // Stop admitting; workers exit after their current job. Returns the jobs that
  // never ran (the caller decides how to dispose of them).
  std::vector<std::unique_ptr<Job>> Abort();
  // Waits for the worker threads to exit (after Drain or Abort). Idempotent.
  void Join();

  Stats stats() const;

  size_t workers() const { return contexts_.size(); }
  size_t queueLimit() const { return queueLimit_; }
  int threadsPerWorker() const { return threadsPerWorker_; }

 private:
  void WorkerLoop(WorkerContext& ctx);

  std::vector<std::unique_ptr<WorkerContext>> contexts_;
  const int threadsPerWorker_;
  const size_t queueLimit_;
  std::shared_ptr<IdleCores> idleCores_;
  Completion onDone_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Job>> queue_;
  bool accepting_ = true;
  bool stopping_ = false;  // workers exit once the queue is empty
  Stats stats_;

  std::vector<std::thread> threads_;  // last member: started after everything else exists
};

}  // namespace edgecv
