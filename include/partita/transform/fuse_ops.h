// FuseOps (TVM relax.transform.FuseOps): operator calls grouped by fusion kind into private
// "Primitive" functions, called from where the calls were.
#pragma once

#include "partita/transform/pass.h"

namespace partita::transform {

/// TVM's FuseOps on Relax operators: FuseOpsByKind's grouping (fuse_ops_by_kind.h, the op
/// registry's fusion kinds, TVM's OpPatternKind) with no code generator, so each group of two or
/// more calls becomes a private function "fused_<ops>" with "Primitive": 1 that the VM runs like
/// any function; opaque calls and lone calls stay where they are, as in TVM. (TVM reads the kinds
/// from the TIR of legalized calls; Partita's operators carry them.) `fuse_opt_level` -1 takes the
/// PassContext's opt level; at level 0 nothing is fused. The PassContext option
/// "relax.FuseOps.max_depth" (default 256) bounds a group's size.
Pass FuseOps(int fuse_opt_level = -1);

}  // namespace partita::transform
