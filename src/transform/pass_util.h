// Internal helpers of the transform passes: the one loop that rewrites the bindings of a function
// and rebuilds only what changed, and the one removal of unreachable functions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "partita/ir/module.h"

namespace partita::transform::detail {

/// `func` with each binding of its body replaced by `rewrite(binding)`: the same binding keeps
/// it, a null one drops it (and a block left empty with it). Blocks, the body and the function
/// are new only where something changed.
Function rewrite_bindings(const Function& func,
                          const std::function<Binding(const Binding&)>& rewrite);

/// `mod` without the functions no root reaches through calls and references (TVM's
/// RemoveUnusedFunctions): the roots are `entries` and every function with "global_symbol".
IRModule remove_unreachable_functions(IRModule mod, const std::vector<std::string>& entries = {});

}  // namespace partita::transform::detail
