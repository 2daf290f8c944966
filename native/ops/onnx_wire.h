// ONNX models read and written at the protobuf wire level: enough to find a graph's nodes, attributes,
// initializers and outputs and to write nodes back, copying every other byte (ops/int8_graph_fusion.h).
// Views point into the caller's bytes. Readers throw std::runtime_error on malformed input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace edgecv::onnx_wire {

// Field numbers of onnx.proto3 used by the fusion.
constexpr uint32_t kModelGraph = 7, kModelOpsetImport = 8;
constexpr uint32_t kGraphNode = 1, kGraphInitializer = 5, kGraphOutput = 12, kGraphValueInfo = 13;
constexpr uint32_t kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeAttribute = 5, kNodeDomain = 7;
constexpr uint32_t kOpsetDomain = 1, kOpsetVersion = 2;

constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

struct Field {
  uint32_t number = 0;
  int wire = 0;
  uint64_t varint = 0;       // varint fields
  std::string_view payload;  // length-delimited and fixed fields
  std::string_view raw;      // the whole field, key included
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool Next(Field& field);           // the next field, or false at the end
  bool NextVarint(uint64_t& value);  // the next of packed varints, or false at the end

 private:
  uint64_t Varint();
  std::string_view Take(uint64_t n);

  std::string_view data_;
  size_t pos_ = 0;
};

void PutVarint(std::string& out, uint64_t value);
void PutVarintField(std::string& out, uint32_t number, uint64_t value);
void PutBytes(std::string& out, uint32_t number, std::string_view bytes);

struct Node {
  std::string_view raw;  // the NodeProto field, key included
  std::vector<std::string_view> inputs, outputs;
  std::string_view name, opType, domain;
  std::vector<std::string_view> attributes;  // AttributeProto payloads
};

std::string_view GraphOf(std::string_view model);  // the ModelProto's GraphProto
std::vector<Node> NodesOf(std::string_view graph);
std::string_view ValueInfoName(std::string_view valueInfo);
// A string attribute's value, or `fallback` when the node has none of that name.
std::string_view StringAttribute(const Node& node, std::string_view name, std::string_view fallback);
// A float32 or int64 initializer's values (raw_data, float_data or int64_data); other types keep only their type.
struct Initializer {
  uint64_t dataType = 0;  // TensorProto.DataType: 1 float, 2 uint8, 7 int64
  std::vector<float> floats;
  std::vector<int64_t> int64s;
};
constexpr uint64_t kFloatTensor = 1, kUint8Tensor = 2, kInt64Tensor = 7;
std::unordered_map<std::string_view, Initializer> Initializers(std::string_view graph);

}  // namespace edgecv::onnx_wire
