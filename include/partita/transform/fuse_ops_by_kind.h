// FuseOpsByKind: groups the operator calls left in the entry functions (after BYOC partitioning)
// by their fusion kind into private functions carrying "Codegen": <codegen> and "Primitive": 1,
// so that a fusing code generator compiles each group into one kernel
// through RunCodegen like any backend.
//
// TVM's FuseOps is the guide; the rules are phrased as invariants of a group, so that what the
// pass makes is exactly what a one-kernel-per-group generator can emit:
//  - a group holds at most one anchor: a reduction-like op (sum, mean, max, min, variance,
//    softmax, log_softmax, layer_norm) or an out-elementwise-fusable op (matmul, conv2d, pooling);
//  - values upstream of the anchor (its prologue) and values feeding the epilogue from the side
//    are injective and computed inline; they are never outputs of the group;
//  - values downstream of the anchor (its epilogue) are elementwise / broadcast ops whose
//    in-group operands on the anchor's side have their own shape, or views (reshape family), so
//    they are computed at the anchor's output element; every output of an anchored group is the
//    anchor or an epilogue value;
//  - a group without an anchor is any injective DAG (a multi-output elementwise kernel);
//  - groups stay acyclic, and inline recomputation is bounded (an index-changing op evaluates its
//    operand once per use, so trees of them are capped).
// Bindings are visited in order and each joins the group of a producer whenever the merged
// group keeps these invariants (greedy, like TVM's dominator-based fusion, without its
// post-dominator pass). An opaque call the code generator accepts is a group of its own. Groups
// made only of view ops (reshape, flatten, squeeze, expand_dims) are left alone: the VM runs
// them as views, which cost nothing. Fusion kinds are the op registry's traits (TVM's
// OpPatternKind), refinable per code generator (KindFusion).
// Only dataflow blocks are fused (as in TVM); a call `accepts` refuses stays where it is.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "partita/ir/module.h"
#include "partita/op/registry.h"
#include "partita/transform/pass.h"

namespace partita::transform {

/// How a code generator fuses: which calls it compiles, and its fusion kind of a call.
struct KindFusion {
  /// Whether the code generator can compile this operator call (null: every call).
  std::function<bool(const CallNode&)> accepts;
  /// The fusion kind of a call (null: its operator's trait, op::OpDef::fusion_kind).
  std::function<op::FusionKind(const CallNode&)> fusion_kind;
};

/// Registers the KindFusion of the code generator `codegen` (a backend does, from its folder);
/// FuseOpsByKind for that codegen uses it unless its options give their own.
void register_kind_fusion(const std::string& codegen, KindFusion fusion);
/// The registered KindFusion of `codegen`, if any.
std::optional<KindFusion> find_kind_fusion(const std::string& codegen);

struct FuseOpsByKindOptions {
  /// The "Codegen" attribute of the grouped functions.
  std::string codegen = "cuda";
  /// Whether the code generator can compile this operator call; calls it refuses are never
  /// grouped. Null: the registered KindFusion of `codegen`, else every operator call.
  std::function<bool(const CallNode&)> accepts;
  /// The fusion kind of a call. Null: the registered KindFusion of `codegen`, else the op's trait.
  std::function<op::FusionKind(const CallNode&)> fusion_kind;
  /// Functions to fuse (empty: every function that is not Primitive, Composite or Codegen).
  std::vector<std::string> entry_functions;
  /// Most bindings in one group.
  int max_group_size = 256;
  /// Most inline evaluations per element through index-changing ops (TVM's max_fuse_depth).
  int max_inline_cost = 64;
  /// Most distinct tensor inputs of one group.
  int max_inputs = 96;
  /// Leaves a group of a single binding where it is instead of making it a function (TVM's
  /// FuseOps does; a code generator needs every call in a function).
  bool keep_single_bindings = false;
};

IRModule fuse_ops_by_kind(IRModule mod, const FuseOpsByKindOptions& options = {});
Pass FuseOpsByKind(FuseOpsByKindOptions options = {});

/// The operator's fusion kind trait (Opaque for a callee that is not a registered operator).
op::FusionKind fusion_kind_of(const CallNode& call);
/// True for reshape-family ops (view trait Always), which keep every element's linear position.
bool is_view_op(const std::string& op_name);

}  // namespace partita::transform
