// RemoveUnusedOutputs (TVM relax.transform.RemoveUnusedOutputs).
#pragma once

#include "partita/transform/pass.h"

namespace partita::transform {

/// A private function (no "global_symbol") returning a tuple, of which no caller in the module
/// reads some elements (every use is a TupleGetItem of the call's result), stops returning them:
/// it returns the used elements (the element itself when one is left) and its callers read the
/// new positions. Then CanonicalizeBindings and DeadCodeElimination clean up, as in TVM.
Pass RemoveUnusedOutputs();

}  // namespace partita::transform
