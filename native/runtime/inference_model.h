// One loaded network behind the runtime that runs it (OpenCV DNN or onnxruntime): the only thing the model
// classes (face detector, embedder, pose, objects) know about inference. They preprocess into an NCHW float
// blob, call Run(), and decode the named outputs.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "runtime/backend.h"
#include "runtime/gpu_sessions.h"
#include "runtime/idle_cores.h"
#include "runtime/shape_runs.h"

namespace edgecv {

enum class RuntimeKind { kOpenCv, kOnnxRuntime };

inline const char* RuntimeName(RuntimeKind kind) {
  return kind == RuntimeKind::kOnnxRuntime ? "onnxruntime" : "opencv";
}

// A model file and the runtime that is to run it (the converter writes one file per runtime).
struct ModelSource {
  std::string path;
  RuntimeKind runtime = RuntimeKind::kOpenCv;
  // The input shape its runs are timed at (idle cores) when the file leaves dimensions open: the model's square,
  // or a raw call's input. Empty: the file's own fixed shape.
  std::vector<int> timingShape;
  // The graph takes any input height and width, and its callers use many (yolov5s on each photo's aspect).
  bool openInput = false;
  // Runs on the GPU (onnxruntime's WebGPU provider, runtime/gpu_sessions.h), with the CPU as its fallback.
  bool gpu = false;
  // On the GPU, with onnxruntime's fusions (its extended and layout optimizations); false: its basic ones only, for
  // a graph whose fused kernels give other answers there (faceres: docs/gpu.md).
  bool gpuFusions = true;
};

// What loading did to one engine's graphs, by model file: filled as its models load (on the JS thread, and on
// workers for raw runs), read by the backend report.
struct GraphRewrites {
  // edgecv operators put into an int8 graph (ops/int8_graph_fusion.h)
  struct Fused {
    int siluLookups = 0;
    int upsamples = 0;
    int concats = 0;
    bool any() const { return siluLookups + upsamples + concats > 0; }
  };
  struct File {
    Fused fused;
    // The optimized (and perhaps fused) graph itself while the engine loads its workers' copies, so that a file
    // is optimized once rather than once per session; dropped when loading ends (LoadingDone).
    std::shared_ptr<const std::string> graph;
  };
  std::mutex mutex;
  std::map<std::string, File> files;
  bool loading = true;

  void LoadingDone() {
    const std::lock_guard<std::mutex> lock(mutex);
    loading = false;
    for (auto& [path, file] : files) file.graph.reset();
  }
};

// How one worker runs its models: the device, and its compute threads per inference.
struct RuntimeOptions {
  BackendInfo backend;
  int threads = 1;
  // Set when idle cores are lent (runtime/idle_cores.h): onnxruntime models then also get a wide session.
  std::shared_ptr<IdleCores> idleCores;
  // The engine's record of rewritten graphs (null: none kept).
  std::shared_ptr<GraphRewrites> rewrites;
  // The engine's count of runs at shapes not warmed up (null: not counted).
  std::shared_ptr<ColdRuns> coldRuns;
  // The engine's GPU sessions, for models whose source says gpu (null: the engine has no GPU net).
  std::shared_ptr<GpuSessions> gpuSessions;
  // False (--no-warm-up): loading runs nothing on the GPU (CheckRun); a GPU net's first request at a shape pays.
  bool warmUp = true;
};

// Not thread-safe: one instance per worker thread.
class InferenceModel {
 public:
  virtual ~InferenceModel() = default;
  // Runs one float32 input (the blob's shape is the input shape) and returns the outputs named at load time,
  // in that order, as dense float32 Mats. They stay valid until the next Run() of this model.
  virtual std::vector<cv::Mat> Run(const cv::Mat& input) = 0;
  // The outputs Run() returns, in order: those named at load, or all of the graph's when none were.
  virtual const std::vector<std::string>& outputNames() const = 0;
  // True when the runtime may hold on to the input Mat after Run() and reuses its output buffers in the next
  // Run(): a caller that outlives one Run() must then copy both ways. False: the input is only read during
  // Run(), and every output Mat is freshly allocated and owned by the caller alone.
  virtual bool SharesBuffers() const = 0;
  // Runs zeros of `shape` (NCHW) until every session a request may run it on (the worker's own, and the engine's
  // wide one when idle cores are lent) is warm at that shape (runtime/shape_runs.h).
  virtual void WarmShape(const std::vector<int>& shape) = 0;
  // The run whose outputs a model checks as it loads (WarmUp): Run(), but for a GPU net loaded without warm-up,
  // which runs it on its CPU session, the same graph (a software GPU takes seconds a net).
  virtual std::vector<cv::Mat> CheckRun(const cv::Mat& input) { return Run(input); }
};

// Loads `source` and checks that every name in `outputs` is an output of it; no names = every output of the
// graph (an operator's own export, whatever its exporter named them). Throws std::runtime_error with a
// message that starts with `what` (e.g. "pose model x.onnx: ").
std::unique_ptr<InferenceModel> LoadInferenceModel(const ModelSource& source, const std::vector<std::string>& outputs,
                                                   const RuntimeOptions& options, const std::string& what);

// Warms the model at [1,3,S,S] (WarmShape), then one more run of zeros (CheckRun) whose outputs it returns, so the
// caller can check the shapes its decoder relies on.
std::vector<cv::Mat> WarmUp(InferenceModel& model, int inputSize, const std::string& what);

// "[1,64,64,17]"
std::string ShapeString(const cv::Mat& m);

// "a", "b", "c": output names in the runtimes' error messages.
std::string QuotedNames(const std::vector<std::string>& names);

// True when `m` is a dense float32 NHWC tensor [1, h, w, channels].
bool IsNhwc(const cv::Mat& m, int h, int w, int channels);

}  // namespace edgecv
