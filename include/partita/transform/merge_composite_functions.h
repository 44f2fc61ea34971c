// MergeCompositeFunctions (TVM relax.transform.MergeCompositeFunctions): groups calls of
// composite functions offloaded to the same backend into one public function with "Codegen"
// and "global_symbol", wherever that creates no cyclic dependency between groups. The
// composites become local functions (`gv`, `gv1`, ...) inside the merged functions.
#pragma once

#include "partita/ir/module.h"
#include "partita/transform/pass.h"

namespace partita::transform {

/// Merges in every Relax function that is not itself a composite / codegen / primitive one.
IRModule merge_composite_functions(IRModule mod);

Pass MergeCompositeFunctions();

}  // namespace partita::transform
