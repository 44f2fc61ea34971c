// Compile-time evaluation for inference (TVM relax.transform.FoldConstant and
// FoldBatchnormToConv2D), and the sequence of both that runs before partitioning.
#pragma once

#include <optional>

#include "partita/transform/pass.h"

namespace partita::transform {

/// Evaluates, at compile time with the host kernels, every call inside a dataflow block whose
/// callee is a pure registered operator, whose arguments are all constants (tensor constants, or
/// shapes, prim values and tuples of them with no symbolic value) and whose result is one tensor
/// of static shape; the call is replaced by the constant. Variables bound to constants are
/// replaced by the constants at their uses, a variable bound to a shape expression by the
/// expression inside call arguments, and bindings left unused are removed. Calls outside
/// dataflow blocks, calls with tuple results and calls a kernel refuses are left as they are.
Pass FoldConstant();

/// The value of `call` (normalized) when FoldConstant folds it: a pure registered operator with
/// a host kernel (or a view), constant arguments and one tensor result of static shape,
/// evaluated on the host VM; nullopt for any other call or when the kernel refuses it.
std::optional<Tensor> evaluate_constant_call(const Call& call);

/// Folds an inference-mode batch_norm whose parameters are constants into the convolution next
/// to it (2-d, NCHW / OIHW, constant weight):
///  - into the one before it (`conv2d(x, W)`, optionally `+ b` with a per-channel constant `b`,
///    used only by the batch_norm): conv2d(x, W * s) + (b * s + t), for any groups;
///  - into the one after it (`conv2d(bn(x), W)`, ungrouped, without padding, where padding would
///    see zeros instead of the batch_norm's shift): conv2d(x, W * s) + sum(W * t);
/// where s = gamma / sqrt(var + eps) and t = beta - mean * s per channel. The new scale and
/// shift are left as arithmetic on constants for FoldConstant to evaluate.
Pass FoldBatchnormToConv2D();

/// What runs on a model before partitioning (partition_for and the CLI): FoldConstant,
/// FoldBatchnormToConv2D, FoldConstant.
Pass FoldForInference();

}  // namespace partita::transform
