// One session per model file for a whole engine, made on first use and shared by every worker's model of that file:
// the wide sessions idle cores lend (runtime/idle_cores.h) and the GPU sessions (runtime/gpu_sessions.h).
// Type-erased so that this header stays free of the runtime's types.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace edgecv {

class SessionsByFile {
 public:
  // The session for `key` (the model file), made by `make` on first use.
  template <class T>
  std::shared_ptr<T> Get(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<void>& slot = sessions_[key];
    if (!slot) slot = make();
    return std::static_pointer_cast<T>(slot);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<void>> sessions_;
};

}  // namespace edgecv
