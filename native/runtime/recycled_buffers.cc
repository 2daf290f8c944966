#include "runtime/recycled_buffers.h"

#include <iterator>
#include <list>
#include <map>
#include <memory>
#include <mutex>

namespace edgecv {
namespace {

class RecyclingMatAllocator final : public cv::MatAllocator {
 public:
  cv::UMatData* allocate(int dims, const int* sizes, int type, void* data, size_t* step, cv::AccessFlag flags,
                         cv::UMatUsageFlags usage) const override {
    // A caller's own data (and steps) is not ours to recycle: the default allocator takes it.
    if (data) return cv::Mat::getDefaultAllocator()->allocate(dims, sizes, type, data, step, flags, usage);
    // Dense layout, as OpenCV's default allocator computes it.
    size_t total = CV_ELEM_SIZE(type);
    for (int i = dims - 1; i >= 0; --i) {
      if (step) step[i] = total;
      total *= static_cast<size_t>(sizes[i]);
    }
    // OpenCV deletes UMatData with `delete` in deallocate(); unique_ptr only until it is handed over.
    auto u = std::make_unique<cv::UMatData>(this);
    u->data = u->origdata = Take(total);
    u->size = total;
    return u.release();
  }

  bool allocate(cv::UMatData* u, cv::AccessFlag, cv::UMatUsageFlags) const override { return u != nullptr; }

  void deallocate(cv::UMatData* u) const override {
    if (!u) return;
    std::unique_ptr<cv::UMatData> owned(u);
    Give(owned->origdata, owned->size);
  }

  RecycledBufferStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  uchar* Take(size_t bytes) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = bySize_.find(bytes);
      if (found != bySize_.end()) {
        const Idle::iterator entry = found->second;
        uchar* buffer = entry->buffer;
        bySize_.erase(found);
        idle_.erase(entry);
        stats_.idleBytes -= bytes;
        ++stats_.reused;
        return buffer;
      }
      ++stats_.allocated;
    }
    return static_cast<uchar*>(cv::fastMalloc(bytes));
  }

  // Keeps the buffer; when that goes over kMaxIdleRecycledBytes the buffers idle the longest go back to the C
  // library (the sizes of a model no longer run, say), the newest included if it alone is too big.
  void Give(uchar* buffer, size_t bytes) const {
    std::vector<uchar*> freed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      idle_.push_front({bytes, buffer});
      bySize_.emplace(bytes, idle_.begin());
      stats_.idleBytes += bytes;
      while (stats_.idleBytes > kMaxIdleRecycledBytes) {
        const Idle::iterator oldest = std::prev(idle_.end());
        auto [first, last] = bySize_.equal_range(oldest->bytes);
        while (first != last && first->second != oldest) ++first;
        bySize_.erase(first);
        stats_.idleBytes -= oldest->bytes;
        freed.push_back(oldest->buffer);
        idle_.erase(oldest);
      }
    }
    for (uchar* b : freed) cv::fastFree(b);
  }

  struct Buffer {
    size_t bytes;
    uchar* buffer;
  };
  using Idle = std::list<Buffer>;

  mutable std::mutex mutex_;
  mutable Idle idle_;  // newest first
  mutable std::multimap<size_t, Idle::iterator> bySize_;
  mutable RecycledBufferStats stats_;
};

}  // namespace

cv::MatAllocator* RecyclingAllocator() {
  // Never destroyed: Mats handed to JS may be released by the garbage collector during process exit.
  static RecyclingMatAllocator* allocator = new RecyclingMatAllocator();
  return allocator;
}

cv::Mat RecyclingMat() {
  cv::Mat mat;
  mat.allocator = RecyclingAllocator();
  return mat;
}

cv::Mat RecycledFloatMat(const std::vector<int>& shape) {
  cv::Mat mat = RecyclingMat();
  mat.create(static_cast<int>(shape.size()), shape.data(), CV_32F);
  return mat;
}

RecycledBufferStats RecycledBuffers() { return static_cast<RecyclingMatAllocator*>(RecyclingAllocator())->stats(); }

}  // namespace edgecv
