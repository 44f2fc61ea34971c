#include "test_helpers.h"

namespace partita::op::testing {

static std::string dim_str(const PrimExpr& e) {
  if (auto c = as_const_int(e)) return std::to_string(*c);
  if (const auto* v = e.as<PrimVarNode>()) return v->name;
  return "?";
}

std::string describe(const StructInfo& s) {
  if (const auto* t = s.as<TupleStructInfoNode>()) {
    std::string out = "[";
    for (size_t i = 0; i < t->fields.size(); ++i) out += (i ? "; " : "") + describe(t->fields[i]);
    return out + "]";
  }
  const auto* t = s.as<TensorStructInfoNode>();
  if (!t) return "<not a tensor>";
  std::string out;
  if (t->shape) {
    out = "(";
    for (size_t i = 0; i < t->shape->size(); ++i) out += (i ? ", " : "") + dim_str((*t->shape)[i]);
    out += ")";
  } else {
    out = "ndim=" + std::to_string(t->ndim);
  }
  return out + " " + (t->dtype.is_void() ? std::string("void") : t->dtype.str());
}

}  // namespace partita::op::testing
