// Reading a call's attributes with defaults (internal to the cuda codegen).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partita/ir/expr.h"

namespace partita::backend::cuda {

inline const AttrValue* find_attr(const CallNode& call, const std::string& name) {
  return call.attrs ? call.attrs->find(name) : nullptr;
}

inline int64_t attr_int(const CallNode& call, const std::string& name, int64_t dflt) {
  const AttrValue* v = find_attr(call, name);
  if (auto* i = v ? std::get_if<int64_t>(v) : nullptr) return *i;
  return dflt;
}

inline std::optional<int64_t> attr_opt_int(const CallNode& call, const std::string& name) {
  const AttrValue* v = find_attr(call, name);
  if (auto* i = v ? std::get_if<int64_t>(v) : nullptr) return *i;
  return std::nullopt;
}

inline double attr_float(const CallNode& call, const std::string& name, double dflt) {
  const AttrValue* v = find_attr(call, name);
  if (auto* d = v ? std::get_if<double>(v) : nullptr) return *d;
  if (auto* i = v ? std::get_if<int64_t>(v) : nullptr) return double(*i);
  return dflt;
}

inline bool attr_bool(const CallNode& call, const std::string& name, bool dflt) {
  const AttrValue* v = find_attr(call, name);
  if (auto* b = v ? std::get_if<bool>(v) : nullptr) return *b;
  return dflt;
}

inline std::string attr_string(const CallNode& call, const std::string& name, const std::string& dflt) {
  const AttrValue* v = find_attr(call, name);
  if (auto* s = v ? std::get_if<std::string>(v) : nullptr) return *s;
  return dflt;
}

/// A list attribute (a single integer is a one-element list); nullopt when absent or None.
inline std::optional<std::vector<int64_t>> attr_ints(const CallNode& call, const std::string& name) {
  const AttrValue* v = find_attr(call, name);
  if (!v) return std::nullopt;
  if (auto* l = std::get_if<std::vector<int64_t>>(v)) return *l;
  if (auto* i = std::get_if<int64_t>(v)) return std::vector<int64_t>{*i};
  return std::nullopt;
}

inline int normalize_axis(int64_t a, int ndim) { return int(a < 0 ? a + ndim : a); }

/// Positions of the letters of `letters` in `layout` ("NCHW" in "NHWC" -> {0, 3, 1, 2}).
inline std::vector<int> layout_positions(const std::string& layout, const char* letters) {
  std::vector<int> pos(4, 0);
  for (int k = 0; k < 4; ++k) pos[size_t(k)] = int(layout.find(letters[k]));
  return pos;
}

/// A pair attribute (one value repeated) and a 4-value padding (top, left, bottom, right).
inline std::vector<int64_t> attr_pair(const CallNode& call, const std::string& name, int64_t dflt) {
  std::vector<int64_t> v = attr_ints(call, name).value_or(std::vector<int64_t>{dflt, dflt});
  if (v.size() == 1) v = {v[0], v[0]};
  return v;
}

inline std::vector<int64_t> attr_padding(const CallNode& call, const std::string& name) {
  std::vector<int64_t> v = attr_ints(call, name).value_or(std::vector<int64_t>{0, 0, 0, 0});
  if (v.size() == 1) v = {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) v = {v[0], v[1], v[0], v[1]};
  return v;
}

}  // namespace partita::backend::cuda
