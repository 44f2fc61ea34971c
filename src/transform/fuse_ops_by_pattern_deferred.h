// Internal to FuseOpsByPattern: its two implementations (tests compare them).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::transform::detail {

/// The reference: one pattern after the other, each partitioning the entry functions as the
/// previous pattern left them and rebuilding them (make_grouped_functions).
IRModule fuse_patterns_one_by_one(const std::vector<FusionPattern>& patterns, IRModule mod,
                                  bool lift_constants, const std::vector<std::string>& entry_functions);

/// The same result, but the entry functions are rebuilt once at the end: between patterns each
/// dataflow block is kept as a list of bindings in its current order, with the group calls made
/// so far and which variable each absorbed one now stands for; a binding is brought up to date
/// when the next pattern starts, so patterns, check functions (with the same context, called in
/// the same order) and attribute getters see what they see in the reference. Returns nullopt
/// (having changed nothing) outside what it handles: entry functions with several dataflow
/// blocks; blocks with match_cast, nested calls, calls of local functions, or a variable or value
/// bound twice; check functions or attribute getters with entry functions not listed in name
/// order.
std::optional<IRModule> fuse_patterns_deferred(const std::vector<FusionPattern>& patterns,
                                               const IRModule& mod, bool lift_constants,
                                               const std::vector<std::string>& entry_functions);

}  // namespace partita::transform::detail
