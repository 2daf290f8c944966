#include "ops/onnx_wire.h"

#include <cstring>
#include <stdexcept>

namespace edgecv::onnx_wire {

namespace {

constexpr uint32_t kValueInfoName = 1;
constexpr uint32_t kAttributeName = 1, kAttributeString = 4;
constexpr uint32_t kTensorDataType = 2, kTensorFloatData = 4, kTensorInt64Data = 7, kTensorName = 8, kTensorRawData = 9;

template <typename T>
T LittleEndian(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof value);  // x86 and ARM Linux are little-endian, as ONNX stores numbers
  return value;
}

}  // namespace

bool Reader::Next(Field& field) {
  if (pos_ == data_.size()) return false;
  const size_t start = pos_;
  const uint64_t key = Varint();
  field.number = static_cast<uint32_t>(key >> 3);
  field.wire = static_cast<int>(key & 7);
  field.varint = 0;
  field.payload = {};
  switch (field.wire) {
    case kVarint:
      field.varint = Varint();
      break;
    case kFixed64:
      field.payload = Take(8);
      break;
    case kLengthDelimited:
      field.payload = Take(Varint());
      break;
    case kFixed32:
      field.payload = Take(4);
      break;
    default:
      throw std::runtime_error("ONNX protobuf: unknown wire type " + std::to_string(field.wire));
  }
  field.raw = data_.substr(start, pos_ - start);
  return true;
}

bool Reader::NextVarint(uint64_t& value) {
  if (pos_ == data_.size()) return false;
  value = Varint();
  return true;
}

uint64_t Reader::Varint() {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ == data_.size()) throw std::runtime_error("ONNX protobuf: truncated varint");
    const uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return value;
  }
  throw std::runtime_error("ONNX protobuf: varint longer than 10 bytes");
}

std::string_view Reader::Take(uint64_t n) {
  if (n > data_.size() - pos_) throw std::runtime_error("ONNX protobuf: a field runs past its message");
  const std::string_view taken = data_.substr(pos_, n);
  pos_ += n;
  return taken;
}

void PutVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void PutVarintField(std::string& out, uint32_t number, uint64_t value) {
  PutVarint(out, (static_cast<uint64_t>(number) << 3) | kVarint);
  PutVarint(out, value);
}

void PutBytes(std::string& out, uint32_t number, std::string_view bytes) {
  PutVarint(out, (static_cast<uint64_t>(number) << 3) | kLengthDelimited);
  PutVarint(out, bytes.size());
  out.append(bytes);
}

std::string_view GraphOf(std::string_view model) {
  Reader reader(model);
  for (Field f; reader.Next(f);) {
    if (f.number == kModelGraph && f.wire == kLengthDelimited) return f.payload;
  }
  throw std::runtime_error("ONNX protobuf: the model has no graph");
}

std::vector<Node> NodesOf(std::string_view graph) {
  std::vector<Node> nodes;
  Reader graphReader(graph);
  for (Field g; graphReader.Next(g);) {
    if (g.number != kGraphNode || g.wire != kLengthDelimited) continue;
    Node& node = nodes.emplace_back();
    node.raw = g.raw;
    Reader reader(g.payload);
    for (Field f; reader.Next(f);) {
      if (f.wire != kLengthDelimited) continue;
      if (f.number == kNodeInput)
        node.inputs.push_back(f.payload);
      else if (f.number == kNodeOutput)
        node.outputs.push_back(f.payload);
      else if (f.number == kNodeName)
        node.name = f.payload;
      else if (f.number == kNodeOpType)
        node.opType = f.payload;
      else if (f.number == kNodeDomain)
        node.domain = f.payload;
      else if (f.number == kNodeAttribute)
        node.attributes.push_back(f.payload);
    }
  }
  return nodes;
}

std::string_view ValueInfoName(std::string_view valueInfo) {
  Reader reader(valueInfo);
  for (Field f; reader.Next(f);) {
    if (f.number == kValueInfoName && f.wire == kLengthDelimited) return f.payload;
  }
  return {};
}

std::string_view StringAttribute(const Node& node, std::string_view name, std::string_view fallback) {
  for (std::string_view attribute : node.attributes) {
    std::string_view attributeName, value;
    bool hasValue = false;
    Reader reader(attribute);
    for (Field f; reader.Next(f);) {
      if (f.wire != kLengthDelimited) continue;
      if (f.number == kAttributeName)
        attributeName = f.payload;
      else if (f.number == kAttributeString)
        value = f.payload, hasValue = true;
    }
    if (attributeName == name && hasValue) return value;
  }
  return fallback;
}

std::unordered_map<std::string_view, Initializer> Initializers(std::string_view graph) {
  std::unordered_map<std::string_view, Initializer> initializers;
  Reader graphReader(graph);
  for (Field g; graphReader.Next(g);) {
    if (g.number != kGraphInitializer || g.wire != kLengthDelimited) continue;
    std::string_view name, raw, packedInt64s;
    Initializer tensor;
    Reader reader(g.payload);
    for (Field f; reader.Next(f);) {
      if (f.number == kTensorName && f.wire == kLengthDelimited)
        name = f.payload;
      else if (f.number == kTensorDataType && f.wire == kVarint)
        tensor.dataType = f.varint;
      else if (f.number == kTensorRawData && f.wire == kLengthDelimited)
        raw = f.payload;
      else if (f.number == kTensorFloatData && f.wire == kLengthDelimited)
        raw = f.payload;  // packed, as raw_data
      else if (f.number == kTensorFloatData && f.wire == kFixed32)
        tensor.floats.push_back(LittleEndian<float>(f.payload.data()));
      else if (f.number == kTensorInt64Data && f.wire == kLengthDelimited)
        packedInt64s = f.payload;
      else if (f.number == kTensorInt64Data && f.wire == kVarint)
        tensor.int64s.push_back(static_cast<int64_t>(f.varint));
    }
    if (name.empty()) continue;
    if (tensor.dataType == kFloatTensor) {
      for (size_t i = 0; i + 4 <= raw.size(); i += 4) tensor.floats.push_back(LittleEndian<float>(raw.data() + i));
    } else if (tensor.dataType == kInt64Tensor) {
      for (size_t i = 0; i + 8 <= raw.size(); i += 8) tensor.int64s.push_back(LittleEndian<int64_t>(raw.data() + i));
      Reader packed(packedInt64s);
      uint64_t value = 0;
      while (packed.NextVarint(value)) tensor.int64s.push_back(static_cast<int64_t>(value));
    }
    initializers.emplace(name, std::move(tensor));
  }
  return initializers;
}

}  // namespace edgecv::onnx_wire
