// Internal to the transform passes: the one loop that rewrites the bindings of a function and
// rebuilds only what changed.
#pragma once

#include <functional>

#include "partita/ir/expr.h"

namespace partita::transform::detail {

/// `func` with each binding of its body replaced by `rewrite(binding)`: the same binding keeps
/// it, a null one drops it (and a block left empty with it). Blocks, the body and the function
/// are new only where something changed.
Function rewrite_bindings(const Function& func, const std::function<Binding(const Binding&)>& rewrite);

}  // namespace partita::transform::detail
