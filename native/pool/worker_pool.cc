#include "pool/worker_pool.h"

#include <atomic>
#include <cstdlib>
#include <set>

#include <opencv2/core.hpp>

namespace edgecv {
namespace {

// process.exit() calls exit() without tearing down the JS environment, so no
// cleanup hook or destructor of ours runs, and exit handlers would destroy
// OpenCV's (and libc's) statics under still-running workers (seen: SIGSEGV in
// imdecode). An atexit handler registered after OpenCV was loaded runs before
// OpenCV's static destructors: it stops and joins every live pool.
std::atomic<bool> g_exiting{false};
std::mutex g_poolsMutex;
std::set<WorkerPool*>& LivePools() {
  static std::set<WorkerPool*> pools;
  return pools;
}

void StopAllPoolsAtExit() {
  g_exiting.store(true);
  std::lock_guard<std::mutex> lock(g_poolsMutex);
  for (WorkerPool* pool : LivePools()) {
    for (auto& job : pool->Abort()) job->Abandon();
    pool->Join();  // waits for at most one in-progress job per worker
  }
}

void RegisterPool(WorkerPool* pool) {
  std::lock_guard<std::mutex> lock(g_poolsMutex);
  std::set<WorkerPool*>& pools = LivePools();
  // Registered after the set exists, so (exit handlers run LIFO) it runs
  // before the set's destructor.
  static const bool registered = (std::atexit(StopAllPoolsAtExit) == 0);
  (void)registered;
  pools.insert(pool);
}

void UnregisterPool(WorkerPool* pool) {
  std::lock_guard<std::mutex> lock(g_poolsMutex);
  LivePools().erase(pool);
}

}  // namespace

WorkerPool::WorkerPool(std::vector<std::unique_ptr<WorkerContext>> contexts, int threadsPerWorker, size_t queueLimit,
                       std::shared_ptr<IdleCores> idleCores, Completion onDone)
    : contexts_(std::move(contexts)),
      threadsPerWorker_(threadsPerWorker),
      queueLimit_(queueLimit),
      idleCores_(std::move(idleCores)),
      onDone_(std::move(onDone)) {
  // Process-wide in OpenCV (see header). 1 = each worker runs its layers serially,
  // which on a small CPU beats several workers fighting over one TBB arena.
  cv::setNumThreads(threadsPerWorker_);
  RegisterPool(this);
  threads_.reserve(contexts_.size());
  for (auto& ctx : contexts_) {
    WorkerContext* raw = ctx.get();
    threads_.emplace_back([this, raw] { WorkerLoop(*raw); });
  }
}

WorkerPool::~WorkerPool() {
  // Safety net only: the engine aborts/drains and joins explicitly. Jobs still
  // queued here cannot be settled any more, so their JS handles are dropped
  // without N-API calls.
  UnregisterPool(this);
  for (auto& job : Abort()) job->Abandon();
  Join();
}

WorkerPool::Admission WorkerPool::Submit(std::unique_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!accepting_) {
      ++stats_.rejected;
      return Admission::kClosed;
    }
    if (queue_.size() >= queueLimit_) {
      ++stats_.rejected;
      return Admission::kOverloaded;
    }
    job->MarkEnqueued();
    if (idleCores_) idleCores_->JobAdmitted();
    queue_.push_back(std::move(job));
    ++stats_.queued;
  }
  wake_.notify_one();
  return Admission::kAccepted;
}

void WorkerPool::Drain() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    accepting_ = false;
    stopping_ = true;
  }
  wake_.notify_all();
}

std::vector<std::unique_ptr<Job>> WorkerPool::Abort() {
  std::vector<std::unique_ptr<Job>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    accepting_ = false;
    stopping_ = true;
    while (!queue_.empty()) {
      dropped.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    if (idleCores_) idleCores_->JobsDropped(static_cast<int>(dropped.size()));
    stats_.queued = 0;
  }
  wake_.notify_all();
  return dropped;
}

void WorkerPool::Join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

WorkerPool::Stats WorkerPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void WorkerPool::WorkerLoop(WorkerContext& ctx) {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left to do
      job = std::move(queue_.front());
      queue_.pop_front();
      --stats_.queued;
      ++stats_.running;
    }
    job->MarkStarted();
    job->Run(ctx);  // noexcept: errors are recorded in the job
    if (idleCores_) idleCores_->JobFinished();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --stats_.running;
      if (job->failed()) {
        ++stats_.failed;
      } else {
        ++stats_.completed;
      }
    }
    if (g_exiting.load()) {
      job->Abandon();  // exit() in progress: JS is gone, just drop it
      continue;
    }
    // Counters are updated first so stats() is consistent once the promise settles.
    onDone_(std::move(job));
  }
}

}  // namespace edgecv
