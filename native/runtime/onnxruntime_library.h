// The onnxruntime shared library, opened at run time with dlopen() from a path the host gives (the
// libonnxruntime.so.1 inside the onnxruntime-node package, or the user's own build, e.g. one with CUDA).
// Nothing links against it at build time, so the addon loads and runs on OpenCV alone when it is absent.
//
// Built against the C API headers of version ORT_API_VERSION; any library of that version or newer serves
// (OrtGetApiBase()->GetApi(ORT_API_VERSION)). Compiled out when CMake found no headers (EDGECV_WITH_ONNXRUNTIME=0).
#pragma once

#include <string>

namespace Ort {
struct Env;
}

namespace edgecv {

struct OnnxRuntimeInfo {
  std::string path;     // the file that was opened
  std::string version;  // the library's own version string, e.g. "1.30.0"
  bool cuda = false;    // its CUDA execution provider is available
  bool webGpu = false;  // it was built with the WebGPU execution provider (Dawn over Vulkan: linux x64)
  int usableCpus = 0;   // the CPUs this process may use: the threads of a wide session (runtime/idle_cores.h)
  // The CPU multiplies uint8 activations by int8 weights with 32-bit sums (x86: AVX-512 VNNI or AVX-VNNI; every
  // other architecture onnxruntime runs on). Where false (x86 with AVX2 or AVX-512 but no VNNI), onnxruntime's fast
  // int8 kernels add pairs of products into 16 bits and can saturate: every session then runs in its precision
  // mode, which gives 8-bit weight tensors exact kernels (ExactInt8Products in onnxruntime_model.cc).
  bool int8DotProduct = true;
};

// Opens the library once per process and initializes the C++ API. Later calls return the library already
// open, whatever path they name (one onnxruntime per process). Throws std::runtime_error with the reason
// (file missing, not an onnxruntime library, older than the headers, or support compiled out).
// Thread-safe.
const OnnxRuntimeInfo& LoadOnnxRuntime(const std::string& path);

// The library opened by LoadOnnxRuntime(), or null.
const OnnxRuntimeInfo* LoadedOnnxRuntime();

// True when this addon was compiled with onnxruntime support.
bool OnnxRuntimeCompiledIn();

// The process's one Ort::Env (logging, shared state). Only after LoadOnnxRuntime() succeeded.
Ort::Env& OnnxRuntimeEnv();

}  // namespace edgecv
