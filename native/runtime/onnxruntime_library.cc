#include "runtime/onnxruntime_library.h"

#include <memory>
#include <mutex>
#include <stdexcept>

#if EDGECV_WITH_ONNXRUNTIME
#include <dlfcn.h>
#include <sched.h>

#include <thread>

#include <algorithm>

#include "runtime/onnxruntime_api.h"
#endif

namespace edgecv {

#if EDGECV_WITH_ONNXRUNTIME
namespace {

struct OpenLibrary {
  OnnxRuntimeInfo info;
  Ort::Env env{nullptr};
};

std::mutex g_mutex;
// Opened once and deliberately never closed nor destroyed: sessions of engines that are never closed (a
// process.exit() with work in flight) must not see the library or its env vanish under them at exit.
OpenLibrary* g_library = nullptr;

// Builds list the CUDA provider even when its shared library was never installed (onnxruntime-node ships it
// as a separate download): only appending it to session options proves it loads. The failure is expected, so
// the env stays silent meanwhile.
bool ProbeCuda(Ort::Env& env) {
  const std::vector<std::string> providers = Ort::GetAvailableProviders();
  if (std::find(providers.begin(), providers.end(), "CUDAExecutionProvider") == providers.end()) return false;
  env.UpdateEnvWithCustomLogLevel(ORT_LOGGING_LEVEL_FATAL);
  bool ok = true;
  try {
    Ort::SessionOptions options;
    options.AppendExecutionProvider_CUDA(OrtCUDAProviderOptions{});
  } catch (const Ort::Exception&) {
    ok = false;
  }
  env.UpdateEnvWithCustomLogLevel(ORT_LOGGING_LEVEL_ERROR);
  return ok;
}

bool HasInt8DotProduct() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
#else
  return true;
#endif
}

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

OpenLibrary* Open(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw std::runtime_error("cannot open onnxruntime library " + path + ": " + (why ? why : "unknown error"));
  }
  using GetApiBaseFn = const OrtApiBase* (*)();
  auto getApiBase = reinterpret_cast<GetApiBaseFn>(dlsym(handle, "OrtGetApiBase"));
  if (!getApiBase) throw std::runtime_error(path + " is not an onnxruntime library (no OrtGetApiBase)");
  const OrtApiBase* base = getApiBase();
  const std::string version = base->GetVersionString();
  const OrtApi* api = base->GetApi(ORT_API_VERSION);
  if (!api) {
    throw std::runtime_error("onnxruntime " + version + " at " + path +
                             " is older than the headers edgecv was built with (C API " +
                             std::to_string(ORT_API_VERSION) + ")");
  }
  Ort::InitApi(api);
  auto library = std::make_unique<OpenLibrary>();
  library->info.path = path;
  library->info.version = version;
  // Warnings (e.g. about unused initializers) would repeat for every worker's session: errors only.
  library->info.usableCpus = UsableCpus();
  library->info.int8DotProduct = HasInt8DotProduct();
  library->env = Ort::Env(ORT_LOGGING_LEVEL_ERROR, "edgecv");
  library->info.cuda = ProbeCuda(library->env);
  const std::vector<std::string> providers = Ort::GetAvailableProviders();
  library->info.webGpu = std::find(providers.begin(), providers.end(), "WebGpuExecutionProvider") != providers.end();
  return library.release();  // see g_library
}

}  // namespace

const OnnxRuntimeInfo& LoadOnnxRuntime(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_library) {
    try {
      g_library = Open(path);
    } catch (const Ort::Exception& e) {
      throw std::runtime_error(std::string("onnxruntime: ") + e.what());
    }
  }
  return g_library->info;
}

const OnnxRuntimeInfo* LoadedOnnxRuntime() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_library ? &g_library->info : nullptr;
}

bool OnnxRuntimeCompiledIn() { return true; }

Ort::Env& OnnxRuntimeEnv() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_library) throw std::logic_error("onnxruntime used before LoadOnnxRuntime()");
  return g_library->env;
}

#else  // built without the onnxruntime headers

const OnnxRuntimeInfo& LoadOnnxRuntime(const std::string& path) {
  throw std::runtime_error("this edgecv addon was built without onnxruntime support (no headers at build time)");
}

const OnnxRuntimeInfo* LoadedOnnxRuntime() { return nullptr; }

bool OnnxRuntimeCompiledIn() { return false; }

Ort::Env& OnnxRuntimeEnv() { throw std::logic_error("this edgecv addon was built without onnxruntime support"); }

#endif

}  // namespace edgecv
