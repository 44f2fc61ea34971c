// BindParams (TVM relax.transform.BindParams): parameters of one function become constants.
#pragma once

#include <string>
#include <vector>

#include "partita/transform/pass.h"

namespace partita::transform {

/// One parameter to bind: named by `name` (it must name exactly one parameter) or, when `var`
/// is set, that parameter itself; `value` is what replaces it (usually a Constant).
struct ParamBinding {
  std::string name;
  Var var;
  Expr value;
};

/// Replaces parameters of the function named `func_name` by values and drops them from its
/// signature, as TVM does: symbolic dimensions of a bound parameter's struct info take the
/// value's dimensions everywhere in the function (`n` becomes 16 when a (16, 4) tensor is bound
/// to an (n, 4) parameter). Error("ValueError") when the function does not exist, a name matches
/// no parameter (or several), a parameter is bound twice, or a value does not fit the
/// parameter (dtype, rank, a static dimension, a symbolic dimension given two values).
Pass BindParams(std::string func_name, std::vector<ParamBinding> params);

/// The function-level half (TVM's FunctionBindParams).
Function function_bind_params(const Function& func, const std::vector<ParamBinding>& params);

}  // namespace partita::transform
