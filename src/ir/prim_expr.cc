// PrimExpr construction. The operators fold constants; `simplify` (src/ir/simplify.cc) does the rest.
#include "partita/ir/prim_expr.h"

#include "field_traits.h"

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

namespace {
int precedence(const PrimExpr& e) {
  auto* b = e.as<PrimBinaryNode>();
  if (!b) return 3;  // leaves, and min / max (call syntax)
  if (b->op == PrimOp::Add || b->op == PrimOp::Sub) return 1;
  if (b->op == PrimOp::Mul || b->op == PrimOp::FloorDiv || b->op == PrimOp::FloorMod) return 2;
  return 3;
}
}  // namespace

void print_prim_expr(const PrimExpr& e, std::string& out, const PrimPrintHook& hook) {
  if (hook && hook(e, out)) return;
  if (!e) {
    out += "null";
  } else if (auto* i = e.as<IntImmNode>()) {
    out += std::to_string(i->value);
  } else if (auto* f = e.as<FloatImmNode>()) {
    out += detail::double_str(f->value);
  } else if (auto* v = e.as<PrimVarNode>()) {
    out += v->name;
  } else if (auto* b = e.as<PrimBinaryNode>()) {
    if (b->op == PrimOp::Min || b->op == PrimOp::Max) {
      out += b->op == PrimOp::Min ? "T.min(" : "T.max(";
      print_prim_expr(b->a, out, hook);
      out += ", ";
      print_prim_expr(b->b, out, hook);
      out += ')';
      return;
    }
    // A child binds less tightly, or as tightly on the right (a - (b - c)): parentheses.
    int p = precedence(e);
    auto child = [&](const PrimExpr& c, bool right) {
      int cp = precedence(c);
      bool paren = cp < p || (right && cp == p);
      if (paren) out += '(';
      print_prim_expr(c, out, hook);
      if (paren) out += ')';
    };
    child(b->a, false);
    out += ' ';
    out += prim_op_name(b->op);
    out += ' ';
    child(b->b, true);
  }
}

std::string prim_expr_str(const PrimExpr& e) {
  std::string out;
  print_prim_expr(e, out);
  return out;
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
