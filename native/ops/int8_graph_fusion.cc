#include "ops/int8_graph_fusion.h"

#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ops/edgecv_ops.h"
#include "ops/onnx_wire.h"

namespace edgecv {

using namespace onnx_wire;  // NOLINT: this file is about the wire format

namespace {

bool IsMicrosoftOp(const Node& node, std::string_view opType) {
  return node.opType == opType && node.domain == "com.microsoft";
}

// QLinearSigmoid inputs: x, x_scale, x_zero_point, y_scale, y_zero_point. QLinearMul inputs: a, a_scale,
// a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point. A pair when the Mul reads x as the sigmoid
// reads it and s as the sigmoid writes it.
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
  return mul.inputs[xAt] == sigmoid.inputs[0] && mul.inputs[xAt + 1] == sigmoid.inputs[1] &&
         mul.inputs[xAt + 2] == sigmoid.inputs[2] && mul.inputs[sAt + 1] == sigmoid.inputs[3] &&
         mul.inputs[sAt + 2] == sigmoid.inputs[4];
}

// An AttributeProto of type INTS.
std::string IntsAttribute(std::string_view name, const std::vector<int64_t>& values) {
  constexpr uint32_t kName = 1, kInts = 8, kType = 20;
  constexpr uint64_t kIntsType = 7;
  std::string attribute;
  PutBytes(attribute, kName, name);
  for (int64_t v : values) PutVarintField(attribute, kInts, static_cast<uint64_t>(v));
  PutVarintField(attribute, kType, kIntsType);
  return attribute;
}

// A NodeProto of edgecv's domain; `attributes` are AttributeProto payloads.
std::string EdgecvNode(const std::vector<std::string_view>& inputs, std::string_view output, std::string_view name,
                       const char* opType, const std::vector<std::string_view>& attributes = {}) {
  std::string node;
  for (std::string_view input : inputs) PutBytes(node, kNodeInput, input);
  PutBytes(node, kNodeOutput, output);
  PutBytes(node, kNodeName, name);
  PutBytes(node, kNodeOpType, opType);
  for (std::string_view attribute : attributes) PutBytes(node, kNodeAttribute, attribute);
  PutBytes(node, kNodeDomain, kEdgecvOpDomain);
  return node;
}

// A QLinearConcat (inputs y_scale, y_zero_point, then x, x_scale, x_zero_point per input) whose scales are
// float initializers and zero points uint8 ones: RequantizeConcat builds its tables from them when it loads.
bool IsUint8ConstantConcat(const Node& concat, const std::unordered_map<std::string_view, Initializer>& initializers) {
  if (!IsMicrosoftOp(concat, "QLinearConcat") || concat.outputs.size() != 1) return false;
  const size_t count = concat.inputs.size();
  if (count < 5 || (count - 2) % 3 != 0) return false;
  const auto constant = [&](std::string_view name, uint64_t dataType) {
    const auto found = initializers.find(name);
    return found != initializers.end() && found->second.dataType == dataType;
  };
  if (!constant(concat.inputs[0], kFloatTensor) || !constant(concat.inputs[1], kUint8Tensor)) return false;
  for (size_t first = 2; first < count; first += 3) {
    if (!constant(concat.inputs[first + 1], kFloatTensor) || !constant(concat.inputs[first + 2], kUint8Tensor))
      return false;
  }
  return true;
}

// For a Resize whose result is each pixel of x copied, NearestUpsample's attribute: "factors" [fy, fx] from
// scales [1, fy, fx, 1] with whole factors, or "sizes" [n, h * fy, w * fx, c] (which the op checks against its
// input's fixed shape when it loads). Mode nearest, and a coordinate mapping under which output index i reads
// floor(i / f) (half_pixel: round((i + 0.5) / f - 0.5) is that for any whole f, with no ties; asymmetric only
// with nearest_mode floor). Empty when the Resize is not such a copy.
std::string UpsampleAttribute(const Node& resize,
                              const std::unordered_map<std::string_view, Initializer>& initializers) {
  if (resize.opType != "Resize" || !resize.domain.empty() || resize.outputs.size() != 1 || resize.inputs.size() < 3)
    return {};
  if (StringAttribute(resize, "mode", "nearest") != "nearest") return {};
  const std::string_view mapping = StringAttribute(resize, "coordinate_transformation_mode", "half_pixel");
  const bool floors =
      mapping == "half_pixel" || mapping == "pytorch_half_pixel" ||
      (mapping == "asymmetric" && StringAttribute(resize, "nearest_mode", "round_prefer_floor") == "floor");
  if (!floors) return {};
  const auto tensor = [&](size_t input) -> const Initializer* {
    if (input >= resize.inputs.size() || resize.inputs[input].empty()) return nullptr;
    const auto found = initializers.find(resize.inputs[input]);
    return found == initializers.end() ? nullptr : &found->second;
  };
  const Initializer* scales = tensor(2);
  const Initializer* sizes = tensor(3);
  const bool noScales =
      resize.inputs[2].empty() || (scales && scales->dataType == kFloatTensor && scales->floats.empty());
  if (noScales) {
    return sizes && sizes->dataType == kInt64Tensor && sizes->int64s.size() == 4 ? IntsAttribute("sizes", sizes->int64s)
                                                                                 : std::string{};
  }
  if (!scales || scales->dataType != kFloatTensor || scales->floats.size() != 4 || sizes) return {};
  const std::vector<float>& s = scales->floats;
  const auto whole = [](float f) { return f >= 1.0f && f <= 64.0f && std::floor(f) == f; };
  if (s[0] != 1.0f || s[3] != 1.0f || !whole(s[1]) || !whole(s[2])) return {};
  return IntsAttribute("factors", {static_cast<int64_t>(s[1]), static_cast<int64_t>(s[2])});
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

namespace {

// The optimized model with its graph's nodes replaced (by index) or dropped, the value infos of removed tensors
// left out, and edgecv's operator domain imported.
std::string WriteFusedModel(std::string_view optimizedModel, std::string_view graph,
                            const std::unordered_map<size_t, std::string>& replaced,
                            const std::unordered_set<size_t>& dropped,
                            const std::unordered_set<std::string_view>& removedTensors) {
  std::string newGraph;
  newGraph.reserve(graph.size());
  size_t nodeIndex = 0;
  Reader graphReader(graph);
  for (Field f; graphReader.Next(f);) {
    if (f.number == kGraphNode && f.wire == kLengthDelimited) {
      const size_t i = nodeIndex++;
      const auto replacement = replaced.find(i);
      if (replacement != replaced.end())
        PutBytes(newGraph, kGraphNode, replacement->second);
      else if (!dropped.count(i))
        newGraph.append(f.raw);
    } else if (!(f.number == kGraphValueInfo && f.wire == kLengthDelimited &&
                 removedTensors.count(ValueInfoName(f.payload)))) {
      newGraph.append(f.raw);
    }
  }

  std::string opset;
  PutBytes(opset, kOpsetDomain, kEdgecvOpDomain);
  PutVarintField(opset, kOpsetVersion, 1);
  std::string model;
  model.reserve(optimizedModel.size());
  Reader modelReader(optimizedModel);
  for (Field f; modelReader.Next(f);) {
    if (f.number == kModelGraph && f.wire == kLengthDelimited)
      PutBytes(model, kModelGraph, newGraph);
    else
      model.append(f.raw);
  }
  PutBytes(model, kModelOpsetImport, opset);
  return model;
}

}  // namespace

FusedInt8Graph FuseInt8Graph(std::string_view optimizedModel) {
  const std::string_view graph = GraphOf(optimizedModel);
  const std::vector<Node> nodes = NodesOf(graph);

  std::unordered_map<std::string_view, std::vector<size_t>> readers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (std::string_view input : nodes[i].inputs) readers[input].push_back(i);
  }
  std::unordered_set<std::string_view> graphOutputs;
  {
    Reader reader(graph);
    for (Field f; reader.Next(f);) {
      if (f.number == kGraphOutput && f.wire == kLengthDelimited) graphOutputs.insert(ValueInfoName(f.payload));
    }
  }

  FusedInt8Graph fused;
  std::unordered_map<size_t, std::string> replaced;  // node index -> the node written in its place
  std::unordered_set<size_t> dropped;
  std::unordered_set<std::string_view> removedTensors;
  std::unordered_set<std::string_view> lookupOutputs;  // uint8 for sure: what SiluLookup writes
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& sigmoid = nodes[i];
    if (!IsMicrosoftOp(sigmoid, "QLinearSigmoid") || sigmoid.outputs.size() != 1) continue;
    const std::string_view s = sigmoid.outputs[0];
    const auto found = readers.find(s);
    if (found == readers.end() || found->second.size() != 1 || graphOutputs.count(s)) continue;
    const size_t mulAt = found->second[0];
    const Node& mul = nodes[mulAt];
    if (!IsMicrosoftOp(mul, "QLinearMul") || !IsSiluPair(sigmoid, mul) || replaced.count(mulAt)) continue;
    // Written where the Mul stood: every input of the lookup is written before the sigmoid was.
    std::vector<std::string_view> inputs = sigmoid.inputs;
    inputs.push_back(mul.inputs[6]);
    inputs.push_back(mul.inputs[7]);
    replaced.emplace(mulAt, EdgecvNode(inputs, mul.outputs[0], mul.name, kSiluLookupOp));
    dropped.insert(i);
    removedTensors.insert(s);
    lookupOutputs.insert(mul.outputs[0]);
    ++fused.siluLookups;
  }
  const auto initializers = Initializers(graph);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& resize = nodes[i];
    const std::string attribute = UpsampleAttribute(resize, initializers);
    if (attribute.empty() || !lookupOutputs.count(resize.inputs[0])) continue;
    replaced.emplace(i,
                     EdgecvNode({resize.inputs[0]}, resize.outputs[0], resize.name, kNearestUpsampleOp, {attribute}));
    ++fused.upsamples;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& concat = nodes[i];
    if (!IsUint8ConstantConcat(concat, initializers)) continue;
    replaced.emplace(i,
                     EdgecvNode(concat.inputs, concat.outputs[0], concat.name, kRequantizeConcatOp, concat.attributes));
    ++fused.concats;
  }
  if (replaced.empty()) return fused;

  fused.model = WriteFusedModel(optimizedModel, graph, replaced, dropped, removedTensors);
  return fused;
}

}  // namespace edgecv
