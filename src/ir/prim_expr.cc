// PrimExpr construction. The operators fold constants; `simplify` (src/ir/simplify.cc) does the rest.
#include "partita/ir/prim_expr.h"

namespace partita {

const char* prim_op_name(PrimOp op) {
  switch (op) {
    case PrimOp::Add: return "+";
    case PrimOp::Sub: return "-";
    case PrimOp::Mul: return "*";
    case PrimOp::FloorDiv: return "//";
    case PrimOp::FloorMod: return "%";
    case PrimOp::Min: return "min";
    case PrimOp::Max: return "max";
  }
  return "?";
}

PrimExpr int_imm(int64_t value, DataType dtype) { return make<IntImmNode>(value, dtype); }

std::optional<int64_t> as_const_int(const PrimExpr& e) {
  if (const auto* imm = e.as<IntImmNode>()) return imm->value;
  return std::nullopt;
}

static PrimExpr binary(PrimOp op, const PrimExpr& a, const PrimExpr& b) {
  return simplify(make<PrimBinaryNode>(op, a, b));
}

PrimExpr operator+(const PrimExpr& a, const PrimExpr& b) { return binary(PrimOp::Add, a, b); }
PrimExpr operator-(const PrimExpr& a, const PrimExpr& b) { return binary(PrimOp::Sub, a, b); }
PrimExpr operator*(const PrimExpr& a, const PrimExpr& b) { return binary(PrimOp::Mul, a, b); }
PrimExpr floordiv(const PrimExpr& a, const PrimExpr& b) { return binary(PrimOp::FloorDiv, a, b); }
PrimExpr floormod(const PrimExpr& a, const PrimExpr& b) { return binary(PrimOp::FloorMod, a, b); }
PrimExpr min(const PrimExpr& a, const PrimExpr& b) { return binary(PrimOp::Min, a, b); }
PrimExpr max(const PrimExpr& a, const PrimExpr& b) { return binary(PrimOp::Max, a, b); }

bool prove_equal(const PrimExpr& a, const PrimExpr& b) {
  auto d = as_const_int(simplify(make<PrimBinaryNode>(PrimOp::Sub, a, b)));
  return d && *d == 0;
}

}  // namespace partita
