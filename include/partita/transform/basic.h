// Basic Relax passes (TVM relax.transform): normalization, binding canonicalization, dataflow
// block formation, dead code elimination.
#pragma once

#include <string>
#include <vector>

#include "partita/transform/pass.h"

namespace partita::transform {

/// Normalizes every Relax function (struct info everywhere, A-normal form, SeqExpr bodies).
Pass Normalize();

/// Removes trivial bindings: a variable bound to another variable (or to a constant/leaf value
/// such as a PrimValue or ShapeExpr) is replaced by that value at every use, and match_casts
/// whose struct info the value already has become plain bindings first. When a dataflow var is
/// only forwarded to an output var (`lv = f(x); gv = lv`), the output var takes the value
/// directly (`gv = f(x)`).
Pass CanonicalizeBindings();

/// Groups runs of at least `min_size` consecutive pure bindings outside dataflow blocks into
/// dataflow blocks; variables only used inside the new block become DataflowVars.
Pass ConvertToDataflow(int min_size = 2);

/// Removes bindings whose value is unused and pure (repeatedly), and functions not reachable
/// from the entry functions: `entry_functions` plus every public function ("global_symbol").
Pass DeadCodeElimination(std::vector<std::string> entry_functions = {});

/// The function-level half of DeadCodeElimination (TVM's RemoveAllUnused): removes bindings of
/// `f` whose value is unused and pure, repeatedly. `mod` is the context for GlobalVar calls.
Function remove_all_unused(Function f, const IRModule& mod);

}  // namespace partita::transform
