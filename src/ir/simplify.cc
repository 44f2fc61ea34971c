// Placeholder simplifier: folds constant binary operations only (replaced by the canonical-form
// simplifier).
#include "partita/ir/prim_expr.h"

namespace partita {

static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

PrimExpr simplify(const PrimExpr& e) {
  const auto* bin = e.as<PrimBinaryNode>();
  if (!bin) return e;
  auto a = as_const_int(bin->a), b = as_const_int(bin->b);
  if (!a || !b) return e;
  switch (bin->op) {
    case PrimOp::Add: return int_imm(*a + *b, e->dtype);
    case PrimOp::Sub: return int_imm(*a - *b, e->dtype);
    case PrimOp::Mul: return int_imm(*a * *b, e->dtype);
    case PrimOp::FloorDiv: return *b == 0 ? e : int_imm(floor_div(*a, *b), e->dtype);
    case PrimOp::FloorMod: return *b == 0 ? e : int_imm(*a - floor_div(*a, *b) * *b, e->dtype);
    case PrimOp::Min: return int_imm(std::min(*a, *b), e->dtype);
    case PrimOp::Max: return int_imm(std::max(*a, *b), e->dtype);
  }
  return e;
}

}  // namespace partita
