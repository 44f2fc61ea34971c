// What the IR layer itself needs to know about an operator: how to infer the struct info of a
// call (BlockBuilder's normalizer), how many arguments it takes (well_formed) and whether it has
// side effects (purity analysis, hence DeadCodeElimination and ConvertToDataflow).
//
// The IR declares this table and the op layer fills it: op::register_op derives each entry from
// the operator's OpDef (op/registry.h). So `ir` depends on no operator definition and the op
// registry stays the single place an operator is described (docs/architecture.md: ir sits below
// op; scripts/check_ir_layer.sh checks that no ir file includes op or anything above it).
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <string>

#include "partita/ir/expr.h"

namespace partita {

struct OpInterface {
  /// The struct info of a call whose arguments are normalized; throws Error naming the operator
  /// and the offending argument when the call is ill-typed.
  std::function<StructInfo(const CallNode& call)> infer_struct_info;
  size_t min_args = 0;
  size_t max_args = kVariadic;  // kVariadic: any number from min_args on
  /// False for operators with side effects (printing, assertions, allocation): a pure call whose
  /// result is unused may be removed, an impure one never.
  bool pure = true;

  static constexpr size_t kVariadic = std::numeric_limits<size_t>::max();
};

/// Registers the interface of the operator `name`; throws Error("ValueError") if it has one.
void register_op_interface(const std::string& name, OpInterface iface);

/// The interface of `name`, or nullptr when no operator of that name is registered. Entries
/// are never removed or changed, so the pointer stays valid.
const OpInterface* find_op_interface(const std::string& name);

/// Fills the table (the op layer's one-time registration of its operators). The op layer
/// installs it when its library is loaded, so a lookup by name finds every built-in operator
/// whatever was called first; find_op_interface runs it before its first lookup.
using OpInterfaceLoader = void (*)();
void set_op_interface_loader(OpInterfaceLoader loader);

}  // namespace partita
