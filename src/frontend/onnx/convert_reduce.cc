// Reductions: ReduceMean/Sum/Max/Min/Prod and the compositions ReduceSumSquare, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp. Axes come from the attribute (opset < 18) or, for ReduceSum
// (opset 13+), from the optional second input.
#include "importer.h"

namespace partita::frontend::onnx_detail {
namespace {

using IntList = std::vector<int64_t>;
using ReduceFn = Expr (*)(Expr, std::optional<IntList>, bool);

/// The axes to reduce (nullopt = all), or "no reduction" when noop_with_empty_axes says so.
std::optional<std::optional<IntList>> reduce_axes(const NodeContext& ctx, bool axes_from_input) {
  std::optional<IntList> axes;
  if (axes_from_input) {
    if (ctx.has_input(1)) axes = ctx.const_ints(1, "axes");
  } else {
    axes = ctx.attr_ints("axes");
  }
  if (axes && axes->empty()) axes.reset();
  if (!axes && ctx.attr_int("noop_with_empty_axes", 0) != 0) return std::nullopt;
  if (axes) {
    int nd = ctx.ndim(0);
    for (auto& a : *axes) a = norm_axis(ctx, a, nd);
  }
  return axes;
}

void reduce(std::map<std::string, ConvertFn>& t, const std::string& name, ReduceFn fn, bool axes_from_input,
            int pre, int post) {
  // pre: 0 none, 1 square, 2 abs, 3 exp; post: 0 none, 1 sqrt, 2 log.
  t[name] = [fn, axes_from_input, pre, post](NodeContext& ctx) -> std::vector<Value> {
    auto axes = reduce_axes(ctx, axes_from_input);
    bool keepdims = ctx.attr_int("keepdims", 1) != 0;
    Expr x = ctx.input(0);
    if (pre == 1) x = ctx.emit(op::multiply(x, x));
    else if (pre == 2) x = ctx.emit(op::abs(x));
    else if (pre == 3) x = ctx.emit(op::exp(x));
    if (!axes) return {Value{x, std::nullopt}};  // noop_with_empty_axes
    Expr y = fn(x, *axes, keepdims);
    if (post == 1) y = op::sqrt(ctx.emit(y));
    else if (post == 2) y = op::log(ctx.emit(y));
    return {Value{y, std::nullopt}};
  };
}

}  // namespace

void register_reduce(std::map<std::string, ConvertFn>& t) {
  reduce(t, "ReduceMean", op::mean, false, 0, 0);
  reduce(t, "ReduceMax", op::max, false, 0, 0);
  reduce(t, "ReduceMin", op::min, false, 0, 0);
  reduce(t, "ReduceProd", [](Expr x, std::optional<IntList> axes, bool keepdims) {
    std::vector<std::pair<std::string, AttrValue>> attrs{{"keepdims", keepdims}};
    if (axes) attrs.emplace_back("axis", *axes);
    return Expr(op::make_call("relax.prod", {x}, attrs));
  }, false, 0, 0);
  reduce(t, "ReduceSum", op::sum, true, 0, 0);
  reduce(t, "ReduceSumSquare", op::sum, false, 1, 0);
  reduce(t, "ReduceL1", op::sum, false, 2, 0);
  reduce(t, "ReduceL2", op::sum, false, 1, 1);
  reduce(t, "ReduceLogSum", op::sum, false, 0, 2);
  reduce(t, "ReduceLogSumExp", op::sum, false, 3, 2);
}

}  // namespace partita::frontend::onnx_detail
