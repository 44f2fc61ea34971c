// EliminateCommonSubexpr (TVM relax.transform.EliminateCommonSubexpr).
#pragma once

#include "partita/transform/pass.h"

namespace partita::transform {

/// A binding whose value (after earlier replacements) is structurally equal to the value of an
/// earlier binding in scope becomes a binding to that earlier variable (`lv1 = lv0`), and later
/// uses read the earlier variable; CanonicalizeBindings and DeadCodeElimination remove what is
/// left. Impure values are never merged; with `call_only`, only calls are. A match_cast merges
/// only with one of the same struct info. Scopes as in TVM: dataflow variables do not outlive
/// their block, an If branch sees the enclosing bindings but not the other branch's, and a
/// nested function starts afresh.
Pass EliminateCommonSubexpr(bool call_only = false);

}  // namespace partita::transform
