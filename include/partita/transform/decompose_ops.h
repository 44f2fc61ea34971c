// DecomposeOpsForInference (TVM relax.transform.DecomposeOpsForInference).
#pragma once

#include <string>

#include "partita/transform/pass.h"

namespace partita::transform {

/// Rewrites composite operators into simpler ones for inference, as TVM does:
/// `R.nn.batch_norm(x, gamma, beta, mean, var)` becomes the tuple
/// `((x - mean) / sqrt(var + epsilon) * gamma + beta, mean, var)` with the per-channel tensors
/// expanded to x's rank (`scale` / `center` false leave out gamma / beta). Applies to the function
/// named `func_name`, or to every function when it is empty; Error("ValueError") when the named
/// function does not exist.
Pass DecomposeOpsForInference(std::string func_name = "");

}  // namespace partita::transform
