#include "runtime/silu_lookup_fusion.h"

#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/silu_lookup_op.h"  // kSiluLookupDomain, kSiluLookupOp

namespace edgecv {

namespace {

// Field numbers of onnx.proto3 used here.
constexpr uint32_t kModelGraph = 7, kModelOpsetImport = 8;
constexpr uint32_t kGraphNode = 1, kGraphOutput = 12, kGraphValueInfo = 13;
constexpr uint32_t kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeDomain = 7;
constexpr uint32_t kValueInfoName = 1;
constexpr uint32_t kOpsetDomain = 1, kOpsetVersion = 2;
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

struct Field {
  uint32_t number = 0;
  int wire = 0;
  std::string_view payload;  // length-delimited fields only
  std::string_view raw;      // the whole field, key included
};

class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}

  // The next field, or false at the end.
  bool Next(Field& field) {
    if (pos_ == data_.size()) return false;
    const size_t start = pos_;
    const uint64_t key = Varint();
    field.number = static_cast<uint32_t>(key >> 3);
    field.wire = static_cast<int>(key & 7);
    field.payload = {};
    switch (field.wire) {
      case kVarint:
        Varint();
        break;
      case kFixed64:
        Skip(8);
        break;
      case kLengthDelimited: {
        const uint64_t size = Varint();
        if (size > data_.size() - pos_) throw std::runtime_error("ONNX protobuf: a field runs past its message");
        field.payload = data_.substr(pos_, size);
        pos_ += size;
        break;
      }
      case kFixed32:
        Skip(4);
        break;
      default:
        throw std::runtime_error("ONNX protobuf: unknown wire type " + std::to_string(field.wire));
    }
    field.raw = data_.substr(start, pos_ - start);
    return true;
  }

 private:
  uint64_t Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ == data_.size()) throw std::runtime_error("ONNX protobuf: truncated varint");
      const uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    throw std::runtime_error("ONNX protobuf: varint longer than 10 bytes");
  }
  void Skip(size_t n) {
    if (n > data_.size() - pos_) throw std::runtime_error("ONNX protobuf: truncated field");
    pos_ += n;
  }

  std::string_view data_;
  size_t pos_ = 0;
};

void PutVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void PutBytes(std::string& out, uint32_t number, std::string_view bytes) {
  PutVarint(out, (static_cast<uint64_t>(number) << 3) | kLengthDelimited);
  PutVarint(out, bytes.size());
  out.append(bytes);
}

struct Node {
  std::string_view raw;
  std::vector<std::string_view> inputs, outputs;
  std::string_view name, opType, domain;
};

Node ReadNode(const Field& nodeField) {
  Node node;
  node.raw = nodeField.raw;
  WireReader reader(nodeField.payload);
  for (Field f; reader.Next(f);) {
    if (f.wire != kLengthDelimited) continue;
    if (f.number == kNodeInput) node.inputs.push_back(f.payload);
    else if (f.number == kNodeOutput) node.outputs.push_back(f.payload);
    else if (f.number == kNodeName) node.name = f.payload;
    else if (f.number == kNodeOpType) node.opType = f.payload;
    else if (f.number == kNodeDomain) node.domain = f.payload;
  }
  return node;
}

std::string_view ValueInfoName(std::string_view valueInfo) {
  WireReader reader(valueInfo);
  for (Field f; reader.Next(f);) {
    if (f.number == kValueInfoName && f.wire == kLengthDelimited) return f.payload;
  }
  return {};
}

// The graph field of a ModelProto.
std::string_view GraphOf(std::string_view model) {
  WireReader reader(model);
  for (Field f; reader.Next(f);) {
    if (f.number == kModelGraph && f.wire == kLengthDelimited) return f.payload;
  }
  throw std::runtime_error("ONNX protobuf: the model has no graph");
}

std::vector<Node> NodesOf(std::string_view graph) {
  std::vector<Node> nodes;
  WireReader reader(graph);
  for (Field f; reader.Next(f);) {
    if (f.number == kGraphNode && f.wire == kLengthDelimited) nodes.push_back(ReadNode(f));
  }
  return nodes;
}

bool IsMicrosoftOp(const Node& node, std::string_view opType) {
  return node.opType == opType && node.domain == "com.microsoft";
}

// QLinearSigmoid inputs: x, x_scale, x_zero_point, y_scale, y_zero_point. QLinearMul inputs: a, a_scale,
// a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point.
bool IsSiluPair(const Node& sigmoid, const Node& mul) {
  if (sigmoid.inputs.size() != 5 || sigmoid.outputs.size() != 1 || mul.inputs.size() != 8 || mul.outputs.size() != 1) {
    return false;
  }
  for (std::string_view name : sigmoid.inputs) {
    if (name.empty()) return false;  // an omitted zero point
  }
  const std::string_view s = sigmoid.outputs[0];
  const size_t xAt = mul.inputs[0] == s ? 3 : mul.inputs[3] == s ? 0 : 8;
  if (xAt == 8 || mul.inputs[6].empty() || mul.inputs[7].empty()) return false;
  const size_t sAt = 3 - xAt;
  // x as the sigmoid reads it, s as the sigmoid writes it
  return mul.inputs[xAt] == sigmoid.inputs[0] && mul.inputs[xAt + 1] == sigmoid.inputs[1] &&
         mul.inputs[xAt + 2] == sigmoid.inputs[2] && mul.inputs[sAt + 1] == sigmoid.inputs[3] &&
         mul.inputs[sAt + 2] == sigmoid.inputs[4];
}

std::string SiluLookupNode(const Node& sigmoid, const Node& mul) {
  std::string node;
  for (std::string_view input : sigmoid.inputs) PutBytes(node, kNodeInput, input);
  PutBytes(node, kNodeInput, mul.inputs[6]);
  PutBytes(node, kNodeInput, mul.inputs[7]);
  PutBytes(node, kNodeOutput, mul.outputs[0]);
  PutBytes(node, kNodeName, mul.name);
  PutBytes(node, kNodeOpType, kSiluLookupOp);
  PutBytes(node, kNodeDomain, kSiluLookupDomain);
  return node;
}

}  // namespace

int CountQdqSigmoids(std::string_view model) {
  const std::vector<Node> nodes = NodesOf(GraphOf(model));
  std::unordered_set<std::string_view> dequantized;
  for (const Node& node : nodes) {
    if (node.opType == "DequantizeLinear" && node.domain.empty() && !node.outputs.empty()) {
      dequantized.insert(node.outputs[0]);
    }
  }
  int count = 0;
  for (const Node& node : nodes) {
    if (node.opType == "Sigmoid" && node.domain.empty() && !node.inputs.empty() && dequantized.count(node.inputs[0])) {
      ++count;
    }
  }
  return count;
}

FusedSiluGraph FuseSiluLookups(std::string_view model) {
  const std::string_view graph = GraphOf(model);
  const std::vector<Node> nodes = NodesOf(graph);

  // Readers of every tensor (a graph output counts as one).
  std::unordered_map<std::string_view, std::vector<size_t>> readers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (std::string_view input : nodes[i].inputs) readers[input].push_back(i);
  }
  std::unordered_set<std::string_view> graphOutputs;
  {
    WireReader reader(graph);
    for (Field f; reader.Next(f);) {
      if (f.number == kGraphOutput && f.wire == kLengthDelimited) graphOutputs.insert(ValueInfoName(f.payload));
    }
  }

  // mul index -> its sigmoid's index
  std::unordered_map<size_t, size_t> pairs;
  std::unordered_set<size_t> fusedSigmoids;
  std::unordered_set<std::string_view> removedTensors;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& sigmoid = nodes[i];
    if (!IsMicrosoftOp(sigmoid, "QLinearSigmoid") || sigmoid.outputs.size() != 1) continue;
    const std::string_view s = sigmoid.outputs[0];
    const auto found = readers.find(s);
    if (found == readers.end() || found->second.size() != 1 || graphOutputs.count(s)) continue;
    const size_t mulAt = found->second[0];
    if (!IsMicrosoftOp(nodes[mulAt], "QLinearMul") || !IsSiluPair(sigmoid, nodes[mulAt]) || pairs.count(mulAt)) continue;
    pairs.emplace(mulAt, i);
    fusedSigmoids.insert(i);
    removedTensors.insert(s);
  }
  FusedSiluGraph fused;
  if (pairs.empty()) return fused;
  fused.lookups = static_cast<int>(pairs.size());

  // The graph: its fields in order, each fused pair's QLinearMul replaced by the lookup where it stood (every
  // input of the lookup is written before the sigmoid was), the sigmoid and its tensor's value_info dropped.
  std::string newGraph;
  newGraph.reserve(graph.size());
  size_t nodeIndex = 0;
  {
    WireReader reader(graph);
    for (Field f; reader.Next(f);) {
      if (f.number == kGraphNode && f.wire == kLengthDelimited) {
        const size_t i = nodeIndex++;
        if (fusedSigmoids.count(i)) continue;
        const auto pair = pairs.find(i);
        if (pair != pairs.end()) PutBytes(newGraph, kGraphNode, SiluLookupNode(nodes[pair->second], nodes[i]));
        else newGraph.append(f.raw);
      } else if (f.number == kGraphValueInfo && f.wire == kLengthDelimited &&
                 removedTensors.count(ValueInfoName(f.payload))) {
        continue;
      } else {
        newGraph.append(f.raw);
      }
    }
  }

  std::string opset;
  PutBytes(opset, kOpsetDomain, kSiluLookupDomain);
  PutVarint(opset, (static_cast<uint64_t>(kOpsetVersion) << 3) | kVarint);
  PutVarint(opset, 1);

  fused.model.reserve(model.size());
  WireReader reader(model);
  for (Field f; reader.Next(f);) {
    if (f.number == kModelGraph && f.wire == kLengthDelimited) PutBytes(fused.model, kModelGraph, newGraph);
    else fused.model.append(f.raw);
  }
  PutBytes(fused.model, kModelOpsetImport, opset);
  return fused;
}

}  // namespace edgecv
