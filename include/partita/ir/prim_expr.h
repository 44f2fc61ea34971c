// Symbolic integer (and scalar) expressions, used for shapes: `n`, `n * 2`, `(n + 1) // 2`.
// Build them with the operators below, which fold constants and call the simplifier so that
// equal expressions have one canonical form (`n * 2 // 2` is `n`, `(n + 1) - 1` is `n`).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "partita/ir/fields.h"
#include "partita/ir/object.h"
#include "partita/runtime/data_type.h"

namespace partita {

class PrimExprNode : public Object {
 public:
  PrimExprNode(NodeKind kind, DataType dtype) : Object(kind), dtype(dtype) {}
  DataType dtype;
  static bool classof(NodeKind k) { return k >= NodeKind::IntImm && k <= NodeKind::PrimBinary; }
};
using PrimExpr = Ref<PrimExprNode>;

class IntImmNode : public PrimExprNode {
 public:
  PARTITA_NODE(IntImm)
  IntImmNode(int64_t value, DataType dtype = DataType::Int(64)) : PrimExprNode(kKind, dtype), value(value) {}
  int64_t value;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("dtype", &IntImmNode::dtype), field("value", &IntImmNode::value));
  }
};
using IntImm = Ref<IntImmNode>;

class FloatImmNode : public PrimExprNode {
 public:
  PARTITA_NODE(FloatImm)
  FloatImmNode(double value, DataType dtype = DataType::Float(32)) : PrimExprNode(kKind, dtype), value(value) {}
  double value;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("dtype", &FloatImmNode::dtype), field("value", &FloatImmNode::value));
  }
};
using FloatImm = Ref<FloatImmNode>;

/// A symbolic variable (TVM's tir.Var), printed as `n = T.int64()`. Compared by binding, not name.
class PrimVarNode : public PrimExprNode {
 public:
  PARTITA_NODE(PrimVar)
  PrimVarNode(std::string name, DataType dtype = DataType::Int(64))
      : PrimExprNode(kKind, dtype), name(std::move(name)) {}
  std::string name;
  static constexpr auto declared_fields() { return std::make_tuple(field("dtype", &PrimVarNode::dtype)); }
};
using PrimVar = Ref<PrimVarNode>;

enum class PrimOp : uint8_t { Add, Sub, Mul, FloorDiv, FloorMod, Min, Max };
const char* prim_op_name(PrimOp op);  // "+", "-", "*", "//", "%", "min", "max"

class PrimBinaryNode : public PrimExprNode {
 public:
  PARTITA_NODE(PrimBinary)
  PrimBinaryNode(PrimOp op, PrimExpr a, PrimExpr b)
      : PrimExprNode(kKind, a->dtype), op(op), a(std::move(a)), b(std::move(b)) {}
  PrimOp op;
  PrimExpr a, b;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("dtype", &PrimBinaryNode::dtype), field("op", &PrimBinaryNode::op),
                           field("a", &PrimBinaryNode::a), field("b", &PrimBinaryNode::b));
  }
};

// Construction. These simplify (see arith/simplify.h); use make<PrimBinaryNode> for a raw node.
PrimExpr int_imm(int64_t value, DataType dtype = DataType::Int(64));
PrimExpr operator+(const PrimExpr& a, const PrimExpr& b);
PrimExpr operator-(const PrimExpr& a, const PrimExpr& b);
PrimExpr operator*(const PrimExpr& a, const PrimExpr& b);
PrimExpr floordiv(const PrimExpr& a, const PrimExpr& b);
PrimExpr floormod(const PrimExpr& a, const PrimExpr& b);
PrimExpr min(const PrimExpr& a, const PrimExpr& b);
PrimExpr max(const PrimExpr& a, const PrimExpr& b);

/// The canonical form of `e`: constants folded, sums and products flattened and ordered.
PrimExpr simplify(const PrimExpr& e);
/// The value of `e` when it is a constant integer.
std::optional<int64_t> as_const_int(const PrimExpr& e);
/// True when `simplify(a - b)` is zero (provably equal for every value of the variables).
bool prove_equal(const PrimExpr& a, const PrimExpr& b);

/// Prints a node its own way (returns true), or leaves it to print_prim_expr (returns false).
using PrimPrintHook = std::function<bool(const PrimExpr& e, std::string& out)>;
/// The one PrimExpr printer: TVMScript's infix form (`n * 2 + 1`, `n // 2`, `T.min(n, m)`) with
/// the parentheses precedence needs. `hook` is asked first about every node (the TVMScript
/// printer names variables by scope and spells typed immediates); otherwise a variable prints
/// as its name, an immediate as its value and a null expression as "null".
void print_prim_expr(const PrimExpr& e, std::string& out, const PrimPrintHook& hook = nullptr);
std::string prim_expr_str(const PrimExpr& e);

}  // namespace partita
