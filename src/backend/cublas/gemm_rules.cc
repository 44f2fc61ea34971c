// The rules of gemm_rules.h.
#include "gemm_rules.h"

#include "partita/ir/struct_info.h"

namespace partita::backend::cublas {
namespace {

const TensorStructInfoNode* tensor_of(const Expr& e) {
  return e.defined() && e->struct_info_ ? e->struct_info_.as<TensorStructInfoNode>() : nullptr;
}

// The shape of a tensor expression with known rank and dims, else nullopt.
std::optional<std::vector<PrimExpr>> shape_of(const Expr& e) {
  auto* t = tensor_of(e);
  if (!t || !t->shape) return std::nullopt;
  return *t->shape;
}

bool is_16bit(DataType t) { return t == DataType::Float(16) || t == DataType::BFloat16(); }

bool static_multiple_of(const PrimExpr& d, int64_t k) {
  auto c = as_const_int(d);
  return c && *c % k == 0;
}

// The dims with leading ones dropped (a (1, M, N) sum holds the (M, N) product's bytes).
std::vector<PrimExpr> without_leading_ones(std::vector<PrimExpr> s) {
  size_t k = 0;
  while (k + 1 < s.size() && as_const_int(s[k]) == std::optional<int64_t>(1)) ++k;
  return {s.begin() + std::ptrdiff_t(k), s.end()};
}

bool same_dims(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!prove_equal(a[k], b[k])) return false;
  return true;
}

}  // namespace

bool swaps_last_two(const std::vector<int64_t>& axes, size_t ndim) {
  if (ndim < 2 || axes.size() != ndim) return false;
  for (size_t k = 0; k + 2 < ndim; ++k)
    if (axes[k] != int64_t(k)) return false;
  return axes[ndim - 2] == int64_t(ndim - 1) && axes[ndim - 1] == int64_t(ndim - 2);
}

std::string matmul_unsupported(const MatmulOperands& m) {
  auto* lt = tensor_of(m.lhs);
  auto* rt = tensor_of(m.rhs);
  auto* pt = tensor_of(m.product);
  if (!lt || !rt || !pt) return "an operand or the product is not a tensor";
  DataType a = lt->dtype, b = rt->dtype, out = pt->dtype;
  bool floats = (a == b) && (a == DataType::Float(32) || is_16bit(a));
  bool ints = a == DataType::Int(8) && b == DataType::Int(8);
  if (!floats && !ints)
    return "operand dtypes " + a.str() + " x " + b.str() + " (cuBLAS takes float16, bfloat16, float32 pairs and int8 x int8)";
  if (floats && !(out == a || (is_16bit(a) && out == DataType::Float(32))))
    return "a " + a.str() + " product of dtype " + out.str();
  if (ints && out != DataType::Int(32)) return "an int8 product of dtype " + out.str() + " (cuBLAS gives int32)";
  auto ls = shape_of(m.lhs), rs = shape_of(m.rhs);
  if (!ls || !rs) return "an operand of unknown shape";
  if (ls->size() < 2 || rs->size() < 2) return "a 1-d operand";
  if (!as_const_int(ls->back())) return "a symbolic reduction axis";
  for (const auto* s : {&*ls, &*rs})
    for (const auto& d : *s)
      if (as_const_int(d) == std::optional<int64_t>(0)) return "an operand with no elements";
  if (ints) {
    // cuBLASLt's IGEMM wants the reduction axis and the rows of the right-hand side in fours.
    if (!static_multiple_of(ls->back(), 4)) return "an int8 reduction axis that is not a multiple of 4";
    if (!static_multiple_of(rs->back(), 4)) return "an int8 right-hand side whose last axis is not a multiple of 4";
  }
  return "";
}

std::string bias_unsupported(const Expr& product, const Expr& bias, const Expr& sum, bool& matrix) {
  matrix = false;
  auto* pt = tensor_of(product);
  if (pt && pt->dtype.is_int())
    return "a bias of an int8 product (cuBLASLt's IGEMM has no bias epilogue)";
  auto ps = shape_of(product), bs = shape_of(bias), ss = shape_of(sum);
  if (!ps || !bs || !ss) return "a bias of unknown shape";
  // The sum must hold the product's elements: the bias only broadcasts into it.
  if (!same_dims(without_leading_ones(*ps), without_leading_ones(*ss))) return "a bias that broadcasts the product";
  if (bs->empty()) return "a scalar bias";
  if (same_dims(without_leading_ones(*bs), without_leading_ones(*ps)) && ps->size() >= 2 &&
      !(bs->size() == 1 || without_leading_ones(*bs).size() == 1)) {
    matrix = true;
    return "";
  }
  for (size_t k = 0; k + 1 < bs->size(); ++k)
    if (as_const_int((*bs)[k]) != std::optional<int64_t>(1)) return "a bias that is neither a vector nor the product's shape";
  if (!prove_equal(bs->back(), ps->back())) return "a bias vector whose length is not the product's last axis";
  return "";
}

std::string scale_unsupported(const Expr& product, const Expr& scale_a, const Expr& scale_b, const Expr& cast) {
  auto* pt = tensor_of(product);
  auto* ct = tensor_of(cast);
  if (!pt || !ct) return "a scaled product that is not a tensor";
  if (!pt->dtype.is_float()) return "a scaled " + pt->dtype.str() + " product";
  for (const Expr* s : {&scale_a, &scale_b}) {
    auto ss = shape_of(*s);
    if (!ss || ss->size() != 1 || as_const_int((*ss)[0]) != std::optional<int64_t>(1)) return "a scale that is not one element";
  }
  if (!(ct->dtype == pt->dtype || ct->dtype == DataType::Float(32)))
    return "a scaled " + pt->dtype.str() + " product cast to " + ct->dtype.str();
  return "";
}

}  // namespace partita::backend::cublas
