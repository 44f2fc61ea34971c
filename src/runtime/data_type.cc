#include "partita/runtime/data_type.h"

#include "partita/support/error.h"

namespace partita {

namespace {
struct Named {
  std::string_view name;
  DataType type;
};
constexpr Named kNamed[] = {
    {"float32", DataType::Float(32)}, {"float16", DataType::Float(16)},
    {"float64", DataType::Float(64)}, {"bfloat16", DataType::BFloat16()},
    {"int8", DataType::Int(8)},       {"int16", DataType::Int(16)},
    {"int32", DataType::Int(32)},     {"int64", DataType::Int(64)},
    {"uint8", DataType::UInt(8)},     {"uint16", DataType::UInt(16)},
    {"uint32", DataType::UInt(32)},   {"uint64", DataType::UInt(64)},
    {"bool", DataType::Bool()},
};
}  // namespace

bool DataType::is_valid(std::string_view text) {
  if (text.empty() || text == "void") return true;
  for (const auto& n : kNamed)
    if (n.name == text) return true;
  return false;
}

DataType DataType::parse(std::string_view text) {
  if (text.empty() || text == "void") return DataType::Void();
  for (const auto& n : kNamed)
    if (n.name == text) return n.type;
  throw_error("TypeError", "unknown dtype \"" + std::string(text) + "\"");
}

std::string DataType::str() const {
  for (const auto& n : kNamed)
    if (n.type == *this) return std::string(n.name);
  if (is_void()) return "";
  const char* base = code_ == Code::Int ? "int" : code_ == Code::UInt ? "uint"
                     : code_ == Code::Float ? "float" : code_ == Code::BFloat ? "bfloat" : "handle";
  std::string s(base);
  s.append(std::to_string(bits_));
  if (lanes_ > 1) s.append("x").append(std::to_string(lanes_));
  return s;
}

}  // namespace partita
