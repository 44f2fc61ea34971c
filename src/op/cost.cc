// Cost traits: the helpers of cost_utils.h and call_flops / call_bytes with their defaults.
#include "cost_utils.h"

#include "infer_utils.h"

namespace partita::op::detail {

std::optional<PrimExpr> numel(const StructInfo& s) {
  const auto* t = s ? s.as<TensorStructInfoNode>() : nullptr;
  if (!t || !t->shape) return std::nullopt;
  return shape_product(*t->shape);
}

std::optional<PrimExpr> sinfo_bytes(const StructInfo& s) {
  if (!s) return std::nullopt;
  if (const auto* t = s.as<TensorStructInfoNode>()) {
    auto n = numel(s);
    if (!n || t->dtype.is_void()) return std::nullopt;
    return *n * int_imm(t->dtype.bytes());
  }
  if (const auto* tup = s.as<TupleStructInfoNode>()) {
    PrimExpr total = int_imm(0);
    for (const StructInfo& f : tup->fields) {
      auto b = sinfo_bytes(f);
      if (!b) return std::nullopt;
      total = total + *b;
    }
    return total;
  }
  return int_imm(0);
}

std::optional<PrimExpr> result_numel(const CallNode& call) {
  const StructInfo& s = call.struct_info_;
  if (const auto* tup = s ? s.as<TupleStructInfoNode>() : nullptr) {
    PrimExpr total = int_imm(0);
    for (const StructInfo& f : tup->fields) {
      auto n = numel(f);
      if (!n) return std::nullopt;
      total = total + *n;
    }
    return total;
  }
  return numel(s);
}

std::optional<PrimExpr> arg_numel(const CallNode& call, size_t i) {
  if (i >= call.args.size() || !call.args[i]) return std::nullopt;
  return numel(call.args[i]->struct_info_);
}

CostFn flops_per_result_element(int64_t per_element) {
  return [per_element](const CallNode& call) -> std::optional<PrimExpr> {
    auto n = result_numel(call);
    if (!n) return std::nullopt;
    return int_imm(per_element) * *n;
  };
}

CostFn no_flops() {
  return [](const CallNode&) -> std::optional<PrimExpr> { return int_imm(0); };
}

CostFn result_bytes_only() {
  return [](const CallNode& call) { return sinfo_bytes(call.struct_info_); };
}

}  // namespace partita::op::detail

namespace partita::op {

std::optional<PrimExpr> call_flops(const CallNode& call) {
  const OpDef* def = callee_op_def(call);
  if (!def) return std::nullopt;
  if (def->flops) return def->flops(call);
  switch (def->fusion_kind) {
    case FusionKind::ElementWise:
    case FusionKind::Broadcast: return detail::result_numel(call);
    case FusionKind::Injective:
    case FusionKind::Tuple: return int_imm(0);
    case FusionKind::CommReduce: return detail::arg_numel(call, 0);
    default: return std::nullopt;
  }
}

std::optional<PrimExpr> call_bytes(const CallNode& call) {
  const OpDef* def = callee_op_def(call);
  if (!def) return std::nullopt;
  if (def->bytes) return def->bytes(call);
  auto total = detail::sinfo_bytes(call.struct_info_);
  for (const Expr& a : call.args) {
    if (!total) return std::nullopt;
    if (!a) return std::nullopt;
    auto b = detail::sinfo_bytes(a->struct_info_);
    if (!b) return std::nullopt;
    *total = *total + *b;
  }
  return total;
}

}  // namespace partita::op
