// FuseOps (TVM relax.transform.FuseOps): operator calls grouped by fusion kind into private
// "Primitive" functions, called from where the calls were.
#pragma once

#include "partita/transform/pass.h"

namespace partita::transform {

/// TVM's FuseOps on Relax operators: FuseOpsByKind's grouping (fuse_ops_by_kind.h, the op
/// registry's fusion kinds, TVM's OpPatternKind) with no code generator, so each group becomes a
/// private function "fused_<ops>" with "Primitive": 1 that the VM runs like any function, and
/// opaque calls stay where they are. `fuse_opt_level` -1 takes the PassContext's opt level; at
/// level 0 nothing is fused. The PassContext option "relax.FuseOps.max_depth" (default 256)
/// bounds a group's size.
Pass FuseOps(int fuse_opt_level = -1);

}  // namespace partita::transform
