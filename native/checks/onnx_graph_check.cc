// Feeds edgecv's ONNX wire-level reading (native/ops/onnx_wire.cc) and the int8 graph fusion built on it
// (native/ops/int8_graph_fusion.cc) the files named on the command line and thousands of damaged copies of
// them (cut short, bytes flipped, bytes inserted): each call must return or throw std::runtime_error, nothing
// else, and the address and undefined-behaviour sanitizers the test builds this with must stay silent. The
// fusion reads an own model file an operator names before onnxruntime does. For the undamaged files it prints
// what it found, so the test can check the fusion still finds its pairs. One JSON line; exits 1 on a failure.
// Built and run by test/onnx-graph-check.test.ts (not part of the addon).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>

#include "ops/int8_graph_fusion.h"

namespace {

int failures = 0;

// 1 when the call threw the reader's error, 0 when it returned.
template <typename Call>
int Survives(const std::string& bytes, Call call) {
  try {
    call(bytes);
    return 0;
  } catch (const std::runtime_error&) {
    return 1;
  } catch (...) {
    ++failures;
    std::fprintf(stderr, "threw something other than std::runtime_error\n");
    return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::mt19937 random(25);
  int cases = 0, refused = 0;
  std::string found = "[";
  for (int f = 1; f < argc; ++f) {
    std::ifstream in(argv[f], std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const edgecv::FusedInt8Graph fused = edgecv::FuseInt8Graph(file);
    found += (f > 1 ? "," : "") + std::string("{\"qdqSigmoids\":") + std::to_string(edgecv::CountQdqSigmoids(file)) +
             ",\"siluLookups\":" + std::to_string(fused.siluLookups) +
             ",\"upsamples\":" + std::to_string(fused.upsamples) + ",\"concats\":" + std::to_string(fused.concats) +
             "}";
    for (int i = 0; i < 400 && !file.empty(); ++i) {
      std::string damaged = file;
      const size_t at = random() % damaged.size();
      switch (i % 3) {
        case 0:
          damaged.resize(at);
          break;
        case 1:
          for (int k = 0; k < 8; ++k) damaged[random() % damaged.size()] = static_cast<char>(random());
          break;
        default:
          damaged.insert(at, std::string(1 + random() % 6, static_cast<char>(random())));
      }
      ++cases;
      refused += Survives(damaged, [](const std::string& b) { edgecv::CountQdqSigmoids(b); });
      refused += Survives(damaged, [](const std::string& b) { edgecv::FuseInt8Graph(b); });
    }
  }
  std::printf("{\"cases\":%d,\"refused\":%d,\"failures\":%d,\"found\":%s]}\n", cases, refused, failures, found.c_str());
  return failures == 0 ? 0 : 1;
}
