// A generic dump of any IR node, one line per field (from declared_fields()), for error messages
// and test output. This is not the TVMScript printer (see script/).
#pragma once

#include <string>

#include "partita/ir/object.h"
#include "partita/ir/prim_expr.h"

namespace partita {

/// A multi-line dump of `x` and everything below it. A variable's fields are shown where it first
/// appears; later uses show only its kind and name.
std::string debug_print(const ObjectRef& x);

/// A one-line rendering of a node: `Var x`, `Op relax.add`, `IntImm 3`, `PrimBinary (n * 2)`,
/// `Call`, `null`.
std::string short_print(const ObjectRef& x);

}  // namespace partita
