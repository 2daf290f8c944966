// Error codes shared by the worker side and the JS side. The string forms are
// the `.code` values JS sees on rejected promises (mirrored in src/engine/errors.ts).
#pragma once

#include <stdexcept>
#include <string>

namespace edgecv {

enum class ErrorCode {
  kNone,
  kOverloaded,       // queue full at submit time
  kInvalidImage,     // bytes could not be decoded
  kClosed,           // engine closed (or closing)
  kInvalidArgument,  // bad call from JS (TS validates first; this is the backstop)
  kInternal,         // anything else, cv::Exception included
};

inline const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNone:
      return "NONE";
    case ErrorCode::kOverloaded:
      return "OVERLOADED";
    case ErrorCode::kInvalidImage:
      return "INVALID_IMAGE";
    case ErrorCode::kClosed:
      return "CLOSED";
    case ErrorCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case ErrorCode::kInternal:
      return "INTERNAL";
  }
  return "INTERNAL";
}

// Thrown on worker threads to fail a job with a specific code; anything else
// that escapes a job becomes INTERNAL.
class JobError : public std::runtime_error {
 public:
  JobError(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace edgecv
