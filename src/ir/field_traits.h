// Internal: type traits over the field value types that declared_fields() uses, and one-line
// renderings of leaf values. Shared by structural equality/hashing and the debug printer.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "partita/ir/attrs.h"
#include "partita/ir/object.h"
#include "partita/ir/prim_expr.h"
#include "partita/runtime/data_type.h"
#include "partita/runtime/tensor.h"

namespace partita::detail {

template <class T> struct IsRef : std::false_type {};
template <class T> struct IsRef<Ref<T>> : std::true_type {};
template <class T> struct IsVector : std::false_type {};
template <class T, class A> struct IsVector<std::vector<T, A>> : std::true_type {};
template <class T> struct IsOptional : std::false_type {};
template <class T> struct IsOptional<std::optional<T>> : std::true_type {};
template <class T> struct IsMap : std::false_type {};
template <class K, class V, class C, class A> struct IsMap<std::map<K, V, C, A>> : std::true_type {};
template <class T> struct IsPair : std::false_type {};
template <class A, class B> struct IsPair<std::pair<A, B>> : std::true_type {};
template <class T> struct IsNamedPair : std::false_type {};
template <class B> struct IsNamedPair<std::pair<std::string, B>> : std::true_type {};
template <class T> struct IsVariant : std::false_type {};
template <class... T> struct IsVariant<std::variant<T...>> : std::true_type {};

/// A quoted string, with quotes and backslashes escaped.
inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out + "\"";
}

inline std::string dtype_str(DataType t) { return t.is_void() ? "void" : t.str(); }

inline std::string tensor_str(const Tensor& t) {
  if (!t.defined()) return "Tensor(undefined)";
  std::string s = "Tensor(shape=[";
  for (size_t i = 0; i < t.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  return s + "], dtype=" + dtype_str(t.dtype()) + ")";
}

inline std::string double_str(double v) {
  if (std::isnan(v)) return "nan";
  std::string s = std::to_string(v);
  // Trim trailing zeros of the fixed representation ("1.500000" -> "1.5").
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s += '0';
  }
  return s;
}

/// One-line rendering of a leaf value (not a node, not a container of nodes).
template <class T>
std::string leaf_str(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return quote(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_same_v<T, PrimOp>) {
    return prim_op_name(v);
  } else if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return double_str(v);
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else if constexpr (std::is_same_v<T, DataType>) {
    return dtype_str(v);
  } else if constexpr (std::is_same_v<T, Tensor>) {
    return tensor_str(v);
  } else if constexpr (std::is_same_v<T, std::monostate>) {
    return "None";
  } else if constexpr (std::is_same_v<T, VDevice>) {  // an attribute value (R.to_vdevice)
    if (!v) return "None";
    return "VDevice(" + (v->target ? v->target->kind : std::string("?")) + ", " +
           std::to_string(v->vdevice_id) + ", " + quote(v->memory_scope) + ")";
  } else if constexpr (IsVariant<T>::value) {
    return std::visit([](const auto& x) { return leaf_str(x); }, v);
  } else if constexpr (IsVector<T>::value) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + leaf_str(v[i]);
    return s + "]";
  } else {
    static_assert(sizeof(T) == 0, "leaf_str: unsupported field type");
  }
}

}  // namespace partita::detail
