// LambdaLift (TVM relax.transform.LambdaLift): functions bound inside functions become module
// functions.
#pragma once

#include "partita/transform/pass.h"

namespace partita::transform {

/// Every function bound to a variable inside another function becomes a private module function
/// named `<outer>_<variable>` (TVM's naming: the lambda's "global_symbol" when it has one, else
/// the outer function's name and the variable's; the whole path of enclosing variables, then a
/// number, when that is taken), and uses of the variable become uses of the new GlobalVar. A
/// lambda that reads variables of the enclosing function (a closure) gets them as extra
/// parameters after its own, and its calls pass them: TVM makes a closure object
/// (R.make_closure / R.invoke_closure) instead, which Partita's VM does not run, so a closure
/// used other than by calling it is an Error("ValueError") naming it. Recursive lambdas call
/// their lifted self.
Pass LambdaLift();

}  // namespace partita::transform
