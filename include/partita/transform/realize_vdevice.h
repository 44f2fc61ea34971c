// RealizeVDevice (TVM relax.transform.RealizeVDevice): places every tensor variable on a
// virtual device by propagating what is known — vdevices in parameter, binding and return
// annotations, and R.hint_on_device — through the graph.
#pragma once

#include "partita/transform/pass.h"

namespace partita::transform {

/// Propagates vdevices as TVM does:
///  1. Known: variables whose struct info names a vdevice, variables a function returns under a
///     vdevice annotation (through tuples of the return value), and results of
///     R.hint_on_device(x, device, scope) (the module's vdevice of that device type, id and
///     memory scope).
///  2. Variables used together are co-located: a binding's variable and every variable its
///     value uses share a device, except across R.to_vdevice and R.hint_on_device, where data
///     may change device. Scalars (R.Prim) are never co-located.
///  3. Known devices spread along co-location first; then the inputs of R.hint_on_device that
///     are still unplaced take the hinted device, and spread in turn.
///  4. Every tensor variable with a device gets it in its struct info; R.hint_on_device(x, d)
///     becomes `x` when x is already on d and R.to_vdevice(x, d) otherwise. A rebuilt
///     function's return struct info is refined to its body's when the body's is more precise
///     (as TVM's Function constructor does).
/// Where annotations conflict, the first in program order wins (TVM's order there depends on
/// hashing). Throws Error("ValueError") when an R.hint_on_device names no vdevice of the module.
Pass RealizeVDevice();

}  // namespace partita::transform
