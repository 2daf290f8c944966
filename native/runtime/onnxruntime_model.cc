#include "runtime/onnxruntime_model.h"

#include <stdlib.h>  // mkstemps
#include <unistd.h>  // close, unlink

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>

#include "ops/edgecv_ops.h"
#include "ops/int8_graph_fusion.h"
#include "runtime/onnxruntime_api.h"
#include "runtime/onnxruntime_gpu.h"
#include "runtime/onnxruntime_library.h"
#include "runtime/recycled_buffers.h"
#include "runtime/shape_runs.h"
#include "ops/uint8_lookup.h"       // LookupIsVectorized
#include "runtime/stage_timings.h"  // Clock, MillisBetween

namespace edgecv {

#if EDGECV_WITH_ONNXRUNTIME

// The engine's one wide session of a file (runtime/idle_cores.h), shared by every worker's model of that file.
struct WideSession {
  explicit WideSession(Ort::Session s, int warmAfter) : session(std::move(s)), runs(warmAfter) {}
  Ort::Session session;
  std::mutex mutex;  // guards runs: a raw model's worker may warm it while another worker borrows it
  ShapeRuns runs;
};

struct OnnxRuntimeModel::Session {
  // The worker's own session on the CPU: for a GPU net, its fallback.
  Ort::Session session{nullptr};
  std::string path;
  // A GPU net: the engine's session of the file on the GPU, and the record of nets that left it.
  std::shared_ptr<GpuSession> gpu;
  std::shared_ptr<GpuSessions> gpuSessions;
  bool warmGpu = true;  // false: loading runs nothing on `gpu` (RuntimeOptions::warmUp)
  // Runs at each input shape on `session`; a shape is warm after one run when the graph's input size is open
  // (no memory plan, see MakeSessionOptions), two otherwise.
  ShapeRuns ownRuns{2};
  std::shared_ptr<ColdRuns> coldRuns;
  // The engine's wide session of this file (runtime/idle_cores.h), or null; run when idleCores lends.
  std::shared_ptr<WideSession> wide;
  std::shared_ptr<IdleCores> idleCores;
  // Fastest run so far on the worker's own threads (infinity: none yet); a model whose runs take kMinLentRunMs
  // even at their fastest is long (runtime/idle_cores.h). The fastest, not the last: a run slowed down by other
  // work on the machine must not make a short model look long.
  double fastestOwnMs = std::numeric_limits<double>::infinity();
  Ort::MemoryInfo memory{nullptr};
  std::string inputName;
  std::vector<std::string> outputNames;
  std::vector<const char*> outputNamePtrs;
  // Output shapes when the graph fixes them all (our converted models do): outputs are then written straight
  // into Mats allocated here, with no copy. Empty when any is dynamic: onnxruntime allocates, we copy.
  std::vector<std::vector<int>> fixedShapes;
};

namespace {

// Without VNNI, onnxruntime's x86 uint8 x int8 kernels (vpmaddubsw) add two products into 16 bits, which saturate
// on real activations, so int8 models silently give other answers (docs/int8.md, "CPUs without VNNI"). Its precision
// mode turns each int8 weight tensor that could saturate into uint8 (w + 128, the zero point moved with it: the same
// products) and runs kernels that sum in 32 bits, as VNNI does, slower than the fast ones. A tensor within -64..64
// (7-bit weights: yolov5s' and each convolution in a model's int8.sevenBitWeights, models/convert/quantize.ts)
// cannot saturate and keeps the fast kernels. onnxruntime applies it only on x86; it changes no fp32 graph.
void ExactInt8Products(Ort::SessionOptions& so) {
  const OnnxRuntimeInfo* library = LoadedOnnxRuntime();
  if (library && !library->int8DotProduct) so.AddConfigEntry("session.x64quantprecision", "1");
}

// `openInput`: the graph's input size is open (yolov5s: each photo's aspect). onnxruntime's memory plan is made per
// input shape: the first run at a shape records it, the second allocates its block, so every new shape would cost
// two slow runs. Without the plan each tensor comes from the session's arena, which the largest shape has grown
// (the square, warmed first), and one run warms a shape.
Ort::SessionOptions MakeSessionOptions(const RuntimeOptions& options, bool openInput) {
  Ort::SessionOptions so;
  ExactInt8Products(so);
  if (openInput) so.DisableMemPattern();
  so.SetIntraOpNumThreads(options.threads);
  so.SetInterOpNumThreads(1);
  so.SetExecutionMode(ORT_SEQUENTIAL);
  so.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  // Intra-op threads keep onnxruntime's default of spinning between ops: without it, threads sleep and wake between
  // the many small ops (docs/performance.md, "Workers that scale"). With 1 thread there is no pool.
  if (options.backend.kind == BackendKind::kCuda) {
    OrtCUDAProviderOptions cuda{};
    cuda.device_id = options.backend.cudaDevice;
    so.AppendExecutionProvider_CUDA(cuda);  // throws when the library has no CUDA provider
  }
  return so;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A fresh file name in the temporary directory, removed again when this goes.
class TempFile {
 public:
  explicit TempFile(const char* suffix) {
    std::string pattern = (std::filesystem::temp_directory_path() / "edgecv-XXXXXX").string() + suffix;
    const int fd = mkstemps(pattern.data(), static_cast<int>(std::char_traits<char>::length(suffix)));
    if (fd < 0) throw std::runtime_error("cannot create a temporary file in " + pattern);
    close(fd);
    path_ = pattern;
  }
  ~TempFile() { unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What a session is made from: the file, or onnxruntime's optimized graph of it, which is loaded with no further
// optimization. On the CPU each file is optimized once while the engine loads and every worker's copy (and the wide
// session) loads that graph: optimizing is most of what a session costs to make (an int8 yolov5s on an AVX2 CPU,
// 0.48 s against 0.06 s from the optimized graph), and the graph loaded is the one the optimizer made in this process
// on this CPU, so the answers are the same to the bit. Where they pay, edgecv's operators are put into it
// (ops/int8_graph_fusion.h; `counts`).
struct SessionGraph {
  std::string path;
  std::shared_ptr<const std::string> optimized;  // null: the file as it is
  GraphRewrites::Fused counts;
};

// The file's optimized graph, fused for a QDQ graph with SiLUs where the lookup has its vector path (without it the
// fusion would not pay). When it fails (a temporary directory that cannot be written), the file.
SessionGraph OptimizeFile(const std::string& path, const RuntimeOptions& options) {
  SessionGraph graph{path, nullptr, {}};
  try {
    const std::string file = ReadFile(path);
    const TempFile optimized(".onnx");
    Ort::SessionOptions so = MakeSessionOptions(options, false);
    so.SetIntraOpNumThreads(1);  // this session never runs
    so.SetOptimizedModelFilePath(optimized.path().c_str());
    Ort::Session(OnnxRuntimeEnv(), file.data(), file.size(), so);  // writes the optimized graph
    std::string model = ReadFile(optimized.path());
    if (LookupIsVectorized() && CountQdqSigmoids(file) > 0) {
      FusedInt8Graph fused = FuseInt8Graph(model);
      if (!fused.model.empty()) {
        model = std::move(fused.model);
        graph.counts = {fused.siluLookups, fused.upsamples, fused.concats};
      }
    }
    graph.optimized = std::make_shared<const std::string>(std::move(model));
  } catch (const std::exception&) {
    graph = SessionGraph{path, nullptr, {}};
  }
  return graph;
}

// On the CPU, OptimizeFile's answer: while the engine loads (each worker its own copy of every model), the one
// another worker already got. A model loaded later (a raw run's) is optimized again, so that it runs what the
// engine's own copies run.
SessionGraph GraphFor(const std::string& path, const RuntimeOptions& options, bool gpu) {
  if (gpu || options.backend.kind != BackendKind::kCpu) return SessionGraph{path, nullptr, {}};
  if (options.rewrites) {
    const std::lock_guard<std::mutex> lock(options.rewrites->mutex);
    const auto known = options.rewrites->files.find(path);
    if (known != options.rewrites->files.end() && known->second.graph) {
      return SessionGraph{path, known->second.graph, known->second.fused};
    }
  }
  return OptimizeFile(path, options);
}

// Records what a session was made from: for the backend report, and while the engine loads, for its other workers.
void Remember(const SessionGraph& graph, const RuntimeOptions& options) {
  if (!options.rewrites) return;
  const std::lock_guard<std::mutex> lock(options.rewrites->mutex);
  options.rewrites->files[graph.path] = {graph.counts, options.rewrites->loading ? graph.optimized : nullptr};
}

Ort::Session MakeSession(const SessionGraph& graph, Ort::SessionOptions so) {
  if (!graph.optimized) return Ort::Session(OnnxRuntimeEnv(), graph.path.c_str(), so);
  so.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_DISABLE_ALL);  // optimized already
  if (graph.counts.any()) so.Add(EdgecvOpDomain());
  return Ort::Session(OnnxRuntimeEnv(), graph.optimized->data(), graph.optimized->size(), so);
}

// The shape to time the graph at: its input shape, each open dimension taken from `timingShape` (same rank);
// empty when a dimension stays unknown.
std::vector<int> TimingInputShape(Ort::Session& session, const std::vector<int>& timingShape) {
  const std::vector<int64_t> dims = session.GetInputTypeInfo(0).GetTensorTypeAndShapeInfo().GetShape();
  std::vector<int> shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] > 0)
      shape.push_back(static_cast<int>(dims[i]));
    else if (timingShape.size() == dims.size() && timingShape[i] > 0)
      shape.push_back(timingShape[i]);
    else
      return {};
  }
  return shape;
}

// A session with a thread per usable CPU. Its threads stop spinning when a run returns (force_spinning_stop, which
// applies only to a session's own threads): onnxruntime's process-wide pool keeps one thread spinning on a core
// between requests (docs/performance.md, "Idle cores are lent to a lone request"). The model warms it (WarmShape).
std::shared_ptr<WideSession> MakeWideSession(const SessionGraph& graph, bool openInput) {
  Ort::SessionOptions so;
  ExactInt8Products(so);
  if (openInput) so.DisableMemPattern();  // as MakeSessionOptions
  so.SetIntraOpNumThreads(LoadedOnnxRuntime()->usableCpus);
  so.SetInterOpNumThreads(1);
  so.AddConfigEntry("session.force_spinning_stop", "1");
  so.SetExecutionMode(ORT_SEQUENTIAL);
  so.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  return std::make_shared<WideSession>(MakeSession(graph, std::move(so)), openInput ? 1 : 2);
}

// Returns the idle cores it borrowed when the run ends, however it ends.
class BorrowedCores {
 public:
  BorrowedCores(IdleCores* cores, bool shortRun) : cores_(cores && cores->Borrow(shortRun) ? cores : nullptr) {}
  ~BorrowedCores() {
    if (cores_) cores_->Return();
  }
  BorrowedCores(const BorrowedCores&) = delete;
  BorrowedCores& operator=(const BorrowedCores&) = delete;
  explicit operator bool() const { return cores_ != nullptr; }

 private:
  IdleCores* cores_;
};

}  // namespace

OnnxRuntimeModel::OnnxRuntimeModel(const ModelSource& source, const std::vector<std::string>& outputs,
                                   const RuntimeOptions& options, const std::string& what)
    : session_(std::make_unique<Session>()) {
  Session& s = *session_;
  const std::string& path = source.path;
  const bool openInput = source.openInput;
  try {
    SessionGraph graph = GraphFor(path, options, source.gpu);
    try {
      s.session = MakeSession(graph, MakeSessionOptions(options, openInput));
    } catch (const Ort::Exception&) {
      if (!graph.optimized) throw;
      graph = SessionGraph{path, nullptr, {}};  // the file as it is, rather than no model
      s.session = MakeSession(graph, MakeSessionOptions(options, openInput));
    }
    s.ownRuns = ShapeRuns(openInput ? 1 : 2);
    s.coldRuns = options.coldRuns;
    s.path = path;
    if (source.gpu) {
      if (!options.gpuSessions) throw std::runtime_error(what + "a GPU net in an engine without GPU sessions");
      s.gpuSessions = options.gpuSessions;
      s.warmGpu = options.warmUp;
      const std::string key = path + (source.gpuFusions ? "" : "\nbasic");
      s.gpu = s.gpuSessions->sessions.Get<GpuSession>(
          key, [&] { return MakeGpuSession(path, openInput, source.gpuFusions); });
    }
    Remember(graph, options);
    s.memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    Ort::AllocatorWithDefaultOptions allocator;
    if (s.session.GetInputCount() != 1) {
      throw std::runtime_error(what + "expected 1 input, the graph has " + std::to_string(s.session.GetInputCount()));
    }
    s.inputName = s.session.GetInputNameAllocated(0, allocator).get();
    std::vector<std::string> graphOutputs;
    for (size_t i = 0; i < s.session.GetOutputCount(); ++i) {
      graphOutputs.push_back(s.session.GetOutputNameAllocated(i, allocator).get());
    }
    bool allFixed = true;
    s.outputNames = outputs.empty() ? graphOutputs : outputs;
    for (const std::string& name : s.outputNames) {
      size_t index = 0;
      while (index < graphOutputs.size() && graphOutputs[index] != name) ++index;
      if (index == graphOutputs.size()) {
        throw std::runtime_error(what + "output \"" + name +
                                 "\" is not an output of the graph (outputs: " + QuotedNames(graphOutputs) + ")");
      }
      const Ort::TypeInfo type = s.session.GetOutputTypeInfo(index);
      const auto tensor = type.GetTensorTypeAndShapeInfo();
      if (tensor.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
        throw std::runtime_error(what + "output \"" + name + "\" is not float32");
      }
      std::vector<int> shape;
      for (int64_t d : tensor.GetShape()) {
        if (d <= 0) allFixed = false;
        shape.push_back(static_cast<int>(d));
      }
      s.fixedShapes.push_back(std::move(shape));
    }
    if (!allFixed) s.fixedShapes.clear();
    for (const std::string& name : s.outputNames) s.outputNamePtrs.push_back(name.c_str());
    // A GPU net's CPU session is only its fallback: it neither borrows idle cores nor is timed for them.
    const std::vector<int> inputShape = options.idleCores && options.backend.kind == BackendKind::kCpu && !source.gpu
                                            ? TimingInputShape(s.session, source.timingShape)
                                            : std::vector<int>{};
    if (!inputShape.empty()) {
      // Two runs of zeros on the worker's own threads (Run() times them; the first pays for allocations): they
      // tell a long model from a short one.
      const cv::Mat zeros(static_cast<int>(inputShape.size()), inputShape.data(), CV_32F, cv::Scalar(0));
      for (int i = 0; i < 2; ++i) Run(zeros);
      s.idleCores = options.idleCores;
      s.wide = s.idleCores->Session<WideSession>(path, [&] { return MakeWideSession(graph, openInput); });
      WarmShape(inputShape);  // the wide session, so the first job that borrows it does not pay for its allocations
    }
  } catch (const Ort::Exception& e) {
    throw std::runtime_error(what + "onnxruntime could not load it: " + e.what());
  }
}

OnnxRuntimeModel::~OnnxRuntimeModel() = default;

const std::vector<std::string>& OnnxRuntimeModel::outputNames() const { return session_->outputNames; }

std::vector<cv::Mat> OnnxRuntimeModel::Run(const cv::Mat& input) {
  Session& s = *session_;
  CV_Assert(input.type() == CV_32F && input.isContinuous());
  const std::vector<int64_t> shape(input.size.p, input.size.p + input.dims);
  if (s.gpu) {
    if (!s.gpuSessions->Lost(s.path) && s.gpu->Takes(shape)) {
      try {
        const std::lock_guard<std::mutex> lock(GpuQueue());
        if (s.gpu->runs.Record(shape) && s.coldRuns) s.coldRuns->Count();
        std::vector<cv::Mat> outputs = RunSession(s.gpu->session, input);
        s.gpuSessions->CountRun(true);
        return outputs;
      } catch (const std::exception& e) {  // Ort::Exception: device lost, out of its memory, a driver error
        s.gpuSessions->MarkLost(s.path, e.what());
      }
    }
    s.gpuSessions->CountRun(false);
    if (s.ownRuns.Record(shape) && s.coldRuns) s.coldRuns->Count();
    return RunSession(s.session, input);
  }
  const BorrowedCores borrowed(s.wide ? s.idleCores.get() : nullptr, s.fastestOwnMs < kMinLentRunMs);
  bool cold = false;
  if (borrowed) {
    const std::lock_guard<std::mutex> lock(s.wide->mutex);
    cold = s.wide->runs.Record(shape);
  } else {
    cold = s.ownRuns.Record(shape);
  }
  if (cold && s.coldRuns) s.coldRuns->Count();
  if (borrowed) return RunSession(s.wide->session, input);
  // Runs on the worker's own threads keep fastestOwnMs current, however RunSession() returns.
  struct OwnThreadsTimer {
    Session& s;
    Clock::time_point start = Clock::now();
    ~OwnThreadsTimer() { s.fastestOwnMs = std::min(s.fastestOwnMs, MillisBetween(start, Clock::now())); }
  } timer{s};
  return RunSession(s.session, input);
}

void OnnxRuntimeModel::WarmShape(const std::vector<int>& shape) {
  Session& s = *session_;
  const std::vector<int64_t> dims(shape.begin(), shape.end());
  const cv::Mat zeros(static_cast<int>(shape.size()), shape.data(), CV_32F, cv::Scalar(0));
  int runs = 0;
  if (s.gpu) {  // the GPU session only: the CPU one is a fallback
    if (!s.warmGpu) return;
    const std::lock_guard<std::mutex> lock(GpuQueue());
    for (; s.gpu->runs.Cold(dims); ++runs) {
      s.gpu->runs.Record(dims);
      RunSession(s.gpu->session, zeros);
    }
    if (runs > 0 && s.coldRuns) s.coldRuns->AddWarmUpRuns(runs);
    return;
  }
  for (; s.ownRuns.Cold(dims); ++runs) {
    s.ownRuns.Record(dims);
    RunSession(s.session, zeros);
  }
  for (; s.wide; ++runs) {
    {
      const std::lock_guard<std::mutex> lock(s.wide->mutex);
      if (!s.wide->runs.Cold(dims)) break;
      s.wide->runs.Record(dims);
    }
    RunSession(s.wide->session, zeros);
  }
  if (runs > 0 && s.coldRuns) s.coldRuns->AddWarmUpRuns(runs);
}

std::vector<cv::Mat> OnnxRuntimeModel::CheckRun(const cv::Mat& input) {
  Session& s = *session_;
  return s.gpu && !s.warmGpu ? RunSession(s.session, input) : Run(input);
}

std::vector<cv::Mat> OnnxRuntimeModel::RunSession(Ort::Session& session, const cv::Mat& input) {
  Session& s = *session_;
  const std::vector<int64_t> inputShape(input.size.p, input.size.p + input.dims);
  // A view of the blob: onnxruntime only reads it during Run().
  Ort::Value in = Ort::Value::CreateTensor<float>(s.memory, const_cast<float*>(input.ptr<float>()), input.total(),
                                                  inputShape.data(), inputShape.size());
  const char* inputName = s.inputName.c_str();
  const size_t n = s.outputNames.size();
  std::vector<cv::Mat> results;
  results.reserve(n);
  if (!s.fixedShapes.empty()) {
    std::vector<Ort::Value> outs;
    outs.reserve(n);
    for (const std::vector<int>& shape : s.fixedShapes) {
      results.push_back(RecycledFloatMat(shape));
      const std::vector<int64_t> dims(shape.begin(), shape.end());
      outs.push_back(Ort::Value::CreateTensor<float>(s.memory, results.back().ptr<float>(), results.back().total(),
                                                     dims.data(), dims.size()));
    }
    session.Run(Ort::RunOptions{nullptr}, &inputName, &in, 1, s.outputNamePtrs.data(), outs.data(), n);
    return results;
  }
  std::vector<Ort::Value> outs = session.Run(Ort::RunOptions{nullptr}, &inputName, &in, 1, s.outputNamePtrs.data(), n);
  for (Ort::Value& out : outs) {
    const std::vector<int64_t> dims = out.GetTensorTypeAndShapeInfo().GetShape();
    const std::vector<int> shape(dims.begin(), dims.end());
    results.push_back(
        cv::Mat(static_cast<int>(shape.size()), shape.data(), CV_32F, out.GetTensorMutableData<float>()).clone());
  }
  return results;
}

#else  // built without the onnxruntime headers

struct OnnxRuntimeModel::Session {};

OnnxRuntimeModel::OnnxRuntimeModel(const ModelSource& source, const std::vector<std::string>& outputs,
                                   const RuntimeOptions& options, const std::string& what) {
  throw std::runtime_error(what + "this edgecv addon was built without onnxruntime support");
}

OnnxRuntimeModel::~OnnxRuntimeModel() = default;

const std::vector<std::string>& OnnxRuntimeModel::outputNames() const {
  static const std::vector<std::string> none;
  return none;
}

// Never called: the constructor throws.
std::vector<cv::Mat> OnnxRuntimeModel::Run(const cv::Mat& input) { return {}; }
void OnnxRuntimeModel::WarmShape(const std::vector<int>& shape) {}
std::vector<cv::Mat> OnnxRuntimeModel::CheckRun(const cv::Mat& input) { return {}; }
std::vector<cv::Mat> OnnxRuntimeModel::RunSession(Ort::Session& session, const cv::Mat& input) { return {}; }

#endif

}  // namespace edgecv
