// Window functions (opset 17): HannWindow, HammingWindow, BlackmanWindow of a size known at
// import, computed here as constants (generalized cosine windows).
#include <cmath>
#include <numbers>

#include "importer.h"

namespace partita::frontend::onnx_detail {
namespace {

/// sum_k (-1)^k a_k cos(2 pi k n / N), N = size when periodic, size - 1 when symmetric.
std::vector<Value> cosine_window(NodeContext& ctx, const std::vector<double>& a) {
  std::vector<int64_t> size_v = ctx.const_ints(0, "size");
  if (size_v.size() != 1 || size_v[0] < 0) ctx.fail("size must be one non-negative value");
  const int64_t size = size_v[0];
  DataType dt = onnx_dtype(int(ctx.attr_int("output_datatype", 1)), "attribute 'output_datatype'");
  const bool periodic = ctx.attr_int("periodic", 1) != 0;
  const double n_den = double(periodic ? size : size - 1);
  ctx.reserve_constant({size}, DataType::Float(64), "the window");
  Tensor t = Tensor::empty({size}, DataType::Float(64));
  for (int64_t n = 0; n < size; ++n) {
    double v = 0;
    for (size_t k = 0; k < a.size(); ++k)
      v += (k % 2 ? -1.0 : 1.0) * a[k] * std::cos(2 * std::numbers::pi * double(k) * double(n) / n_den);
    t.data_as<double>()[n] = v;
  }
  Expr e = constant(t);
  if (dt == DataType::Float(64)) return {Value{e, std::nullopt}};
  return {Value{op::astype(e, dt), std::nullopt}};  // FoldConstant evaluates the conversion
}

}  // namespace

void register_signal(std::map<std::string, ConvertFn>& t) {
  t["HannWindow"] = [](NodeContext& ctx) { return cosine_window(ctx, {0.5, 0.5}); };
  t["HammingWindow"] = [](NodeContext& ctx) { return cosine_window(ctx, {25.0 / 46.0, 21.0 / 46.0}); };
  t["BlackmanWindow"] = [](NodeContext& ctx) { return cosine_window(ctx, {0.42, 0.5, 0.08}); };
}

}  // namespace partita::frontend::onnx_detail
