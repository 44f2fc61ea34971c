// Neural-network ONNX operators: MatMul, Gemm, Conv, ConvTranspose, pooling, Resize,
// normalizations (batch, layer, instance, local response, mean-variance), softmax.
// 1-D convolutions and pools run as 2-D ones over an inserted unit height.
#include <cmath>

#include "importer.h"

namespace partita::frontend::onnx_detail {
namespace {

using IntList = std::vector<int64_t>;

std::vector<Value> one(Expr e) { return {Value{std::move(e), std::nullopt}}; }

/// A list attribute of `n` entries (default `def` repeated); fails when its length differs.
IntList list_attr(const NodeContext& ctx, const std::string& name, size_t n, int64_t def) {
  auto v = ctx.attr_ints(name);
  if (!v) return IntList(n, def);
  if (v->size() != n)
    ctx.fail("attribute '" + name + "' has " + std::to_string(v->size()) + " values, expected " + std::to_string(n));
  return *v;
}

/// Pads (begins then ends, ONNX order) from `pads` or `auto_pad`.
IntList spatial_pads(const NodeContext& ctx, const std::vector<PrimExpr>& in_spatial, const IntList& kernel,
                     const IntList& strides, const IntList& dilations) {
  const size_t n = kernel.size();
  std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") return list_attr(ctx, "pads", 2 * n, 0);
  if (auto_pad == "VALID") return IntList(2 * n, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") ctx.fail("unknown auto_pad '" + auto_pad + "'");
  IntList pads(2 * n);
  for (size_t k = 0; k < n; ++k) {
    auto in = as_const_int(in_spatial[k]);
    if (!in) ctx.fail("auto_pad " + auto_pad + " needs static spatial dimensions", "NotImplementedError");
    int64_t out = (*in + strides[k] - 1) / strides[k];
    int64_t total = std::max<int64_t>((out - 1) * strides[k] + (kernel[k] - 1) * dilations[k] + 1 - *in, 0);
    int64_t small = total / 2, big = total - small;
    pads[k] = auto_pad == "SAME_UPPER" ? small : big;
    pads[k + n] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return pads;
}

/// The window geometry of a Conv/pool node over an input of rank 3 or 4.
struct Window {
  bool is_1d = false;
  IntList kernel, strides, dilations, pads;  // 2-D: pads = (top, left, bottom, right)
};

Window window(const NodeContext& ctx, const std::vector<PrimExpr>& in_shape, std::optional<IntList> kernel,
              bool has_dilations) {
  const size_t rank = in_shape.size();
  if (rank != 3 && rank != 4)
    ctx.fail("only 1-D and 2-D windows are supported (input rank " + std::to_string(rank) + ")",
             "NotImplementedError");
  const size_t n = rank - 2;
  Window w;
  w.is_1d = n == 1;
  if (!kernel) kernel = ctx.attr_ints("kernel_shape");
  if (!kernel || kernel->size() != n) ctx.fail("kernel_shape must have " + std::to_string(n) + " values");
  IntList strides = list_attr(ctx, "strides", n, 1);
  IntList dil = has_dilations ? list_attr(ctx, "dilations", n, 1) : IntList(n, 1);
  std::vector<PrimExpr> spatial(in_shape.begin() + 2, in_shape.end());
  IntList pads = spatial_pads(ctx, spatial, *kernel, strides, dil);
  if (w.is_1d) {
    w.kernel = {1, (*kernel)[0]};
    w.strides = {1, strides[0]};
    w.dilations = {1, dil[0]};
    w.pads = {0, pads[0], 0, pads[1]};
  } else {
    w.kernel = *kernel;
    w.strides = strides;
    w.dilations = dil;
    w.pads = pads;
  }
  return w;
}

std::vector<Value> conv(NodeContext& ctx) {
  Expr x = ctx.input(0), w = ctx.input(1);
  auto xs = ctx.shape(0), ws = ctx.shape(1);
  if (ws.size() != xs.size()) ctx.fail("weight rank differs from input rank");
  IntList kernel;
  for (size_t k = 2; k < ws.size(); ++k) {
    auto c = as_const_int(ws[k]);
    if (!c) ctx.fail("the kernel size must be static", "NotImplementedError");
    kernel.push_back(*c);
  }
  if (auto ks = ctx.attr_ints("kernel_shape"); ks && *ks != kernel) ctx.fail("kernel_shape differs from the weight's shape");
  Window win = window(ctx, xs, kernel, true);
  if (win.is_1d) {
    x = ctx.emit(op::expand_dims(x, {2}));
    w = ctx.emit(op::expand_dims(w, {2}));
  }
  Expr y = ctx.emit(op::nn::conv2d(x, w, win.strides, win.pads, win.dilations, ctx.attr_int("group", 1)));
  if (ctx.has_input(2)) {
    std::vector<PrimExpr> bshape{int_imm(1), int_imm(-1), int_imm(1)};
    if (!win.is_1d) bshape.push_back(int_imm(1));
    Expr b = ctx.emit(op::reshape(ctx.input(2), bshape));
    if (win.is_1d) {
      y = ctx.emit(op::squeeze(y, IntList{2}));
      return one(op::add(y, b));
    }
    return one(op::add(y, b));
  }
  if (win.is_1d) return one(op::squeeze(y, IntList{2}));
  return one(y);
}

std::vector<Value> pool(NodeContext& ctx, bool is_max) {
  if (is_max && ctx.has_output(1)) ctx.fail("the Indices output is not supported", "NotImplementedError");
  Expr x = ctx.input(0);
  Window win = window(ctx, ctx.shape(0), std::nullopt, is_max);
  if (win.is_1d) x = ctx.emit(op::expand_dims(x, {2}));
  bool ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  Expr y = is_max ? op::nn::max_pool2d(x, win.kernel, win.strides, win.pads, win.dilations, ceil_mode, false)
                  : op::nn::avg_pool2d(x, win.kernel, win.strides, win.pads, win.dilations, ceil_mode,
                                       ctx.attr_int("count_include_pad", 0) != 0);
  if (win.is_1d) return one(op::squeeze(ctx.emit(y), IntList{2}));
  return one(y);
}

std::vector<Value> global_pool(NodeContext& ctx, bool is_max) {
  int nd = ctx.ndim(0);
  if (nd < 3) ctx.fail("input must have rank >= 3");
  if (!is_max && nd == 4) return one(op::nn::adaptive_avg_pool2d(ctx.input(0), IntList{1, 1}));
  IntList axes;
  for (int k = 2; k < nd; ++k) axes.push_back(k);
  return one(is_max ? op::max(ctx.input(0), axes, true) : op::mean(ctx.input(0), axes, true));
}

Expr call(const std::string& op, std::vector<Expr> args, std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
  return op::make_call(op, std::move(args), std::move(attrs));
}

/// Resize of a 4-D NCHW input over its spatial axes (N and C keep their size), by the output
/// sizes (input 3) or the scales (input 2) when input * scale is whole. As in TVM, the
/// coordinate transformation uses output size / input size as the scale.
std::vector<Value> resize(NodeContext& ctx) {
  const std::string mode = ctx.attr_string("mode", "nearest");
  const std::string coord = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  if (coord == "tf_crop_and_resize") ctx.fail("coordinate_transformation_mode tf_crop_and_resize is not supported", "NotImplementedError");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") ctx.fail("unknown mode '" + mode + "'");
  if (ctx.attr_int("antialias", 0) != 0) ctx.fail("antialias is not supported", "NotImplementedError");
  std::vector<PrimExpr> in = ctx.shape(0);
  if (in.size() != 4) ctx.fail("only 4-D (NCHW) inputs are supported", "NotImplementedError");
  std::vector<PrimExpr> out;
  if (ctx.has_input(3)) {
    auto sizes = ctx.input_sym(3);
    if (!sizes || sizes->values.size() != 4) ctx.fail("sizes (input 3) must be 4 values known at import", "NotImplementedError");
    out = sizes->values;
  } else {
    if (!ctx.has_input(2)) ctx.fail("either scales or sizes must be given");
    auto scales_t = ctx.input_const(2);
    if (!scales_t) ctx.fail("scales (input 2) must be a constant known at import", "NotImplementedError");
    std::vector<double> scales = tensor_doubles(*scales_t);
    if (scales.size() != 4) ctx.fail("scales must have 4 values");
    for (size_t k = 0; k < 4; ++k) {
      if (scales[k] == 1.0) {
        out.push_back(in[k]);
        continue;
      }
      auto d = as_const_int(in[k]);
      if (!d) ctx.fail("a scaled axis must have a static size", "NotImplementedError");
      // ONNX maps coordinates with the scale itself; resize2d, as TVM's, with output / input.
      // They agree when the scaled size is whole; otherwise refuse rather than differ.
      const double scaled = double(*d) * scales[k];
      if (std::abs(scaled - std::round(scaled)) > 1e-6 * std::max(1.0, scaled))
        ctx.fail("scale " + std::to_string(scales[k]) + " of axis " + std::to_string(k) + " (size " +
                     std::to_string(*d) + ") gives a non-integral output size " + std::to_string(scaled),
                 "NotImplementedError");
      out.push_back(int_imm(int64_t(std::llround(scaled))));
    }
  }
  if (!prove_equal(out[0], in[0]) || !prove_equal(out[1], in[1]))
    ctx.fail("only the spatial axes (2 and 3) may be resized", "NotImplementedError");
  std::vector<std::pair<std::string, AttrValue>> attrs{
      {"layout", std::string("NCHW")},
      {"method", mode == "nearest" ? std::string("nearest_neighbor") : mode},
      {"coordinate_transformation_mode", coord},
      {"rounding_method", mode == "nearest" ? ctx.attr_string("nearest_mode", "round_prefer_floor") : std::string("")},
      {"cubic_alpha", ctx.attr_float("cubic_coeff_a", -0.75)},
      {"cubic_exclude", ctx.attr_int("exclude_outside", 0)},
      {"extrapolation_value", ctx.attr_float("extrapolation_value", 0.0)}};
  Expr size = make<ShapeExprNode>(std::vector<PrimExpr>{out[2], out[3]});
  return one(call("relax.image.resize2d", {ctx.input(0), size}, std::move(attrs)));
}

/// ConvTranspose over 1-D (as 2-D with a unit height) and 2-D inputs; output_shape and auto_pad
/// become explicit padding as the ONNX specification computes it.
std::vector<Value> conv_transpose(NodeContext& ctx) {
  Expr x = ctx.input(0), w = ctx.input(1);
  auto xs = ctx.shape(0), ws = ctx.shape(1);
  if (xs.size() != 3 && xs.size() != 4)
    ctx.fail("only 1-D and 2-D inputs are supported (rank " + std::to_string(xs.size()) + ")", "NotImplementedError");
  if (ws.size() != xs.size()) ctx.fail("weight rank differs from input rank");
  const size_t n = xs.size() - 2;
  IntList kernel, in_sizes;
  for (size_t k = 0; k < n; ++k) {
    auto kc = as_const_int(ws[k + 2]);
    auto ic = as_const_int(xs[k + 2]);
    if (!kc || !ic) ctx.fail("kernel and spatial sizes must be static", "NotImplementedError");
    kernel.push_back(*kc);
    in_sizes.push_back(*ic);
  }
  IntList strides = list_attr(ctx, "strides", n, 1), dil = list_attr(ctx, "dilations", n, 1);
  IntList out_pad = list_attr(ctx, "output_padding", n, 0);
  IntList pads = list_attr(ctx, "pads", 2 * n, 0);
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  auto output_shape = ctx.attr_ints("output_shape");
  if (output_shape && output_shape->size() == n + 2) output_shape = IntList(output_shape->begin() + 2, output_shape->end());
  if (output_shape && output_shape->size() != n) ctx.fail("output_shape must have one value per spatial axis");
  if (auto_pad == "VALID") pads.assign(2 * n, 0);
  if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t k = 0; k < n; ++k) {
      int64_t target = output_shape ? (*output_shape)[k] : in_sizes[k] * strides[k];
      int64_t total = strides[k] * (in_sizes[k] - 1) + out_pad[k] + (kernel[k] - 1) * dil[k] + 1 - target;
      int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor(total / 2)
      pads[k] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[k + n] = total - pads[k];
      if (pads[k + n] < 0) {  // a larger output than the window covers: extra output padding
        out_pad[k] += -pads[k + n];
        pads[k + n] = 0;
      }
      if (pads[k] < 0) ctx.fail("output_shape needs negative leading padding", "NotImplementedError");
    }
  }
  IntList strides2 = strides, dil2 = dil, out_pad2 = out_pad, pads2 = pads;
  if (n == 1) {
    x = ctx.emit(op::expand_dims(x, {2}));
    w = ctx.emit(op::expand_dims(w, {2}));
    strides2 = {1, strides[0]};
    dil2 = {1, dil[0]};
    out_pad2 = {0, out_pad[0]};
    pads2 = {0, pads[0], 0, pads[1]};
  }
  Expr y = ctx.emit(call("relax.nn.conv2d_transpose", {x, w},
                         {{"strides", strides2}, {"padding", pads2}, {"output_padding", out_pad2},
                          {"dilation", dil2}, {"groups", ctx.attr_int("group", 1)}}));
  if (ctx.has_input(2)) {
    std::vector<PrimExpr> bshape{int_imm(1), int_imm(-1), int_imm(1), int_imm(1)};
    y = ctx.emit(op::add(y, ctx.emit(op::reshape(ctx.input(2), bshape))));
  }
  if (n == 1) return one(op::squeeze(y, IntList{2}));
  return one(y);
}

/// Local response normalization across channels: x / (bias + alpha / size * window sum of x^2)
/// ^ beta, the window sum as an average pool over the channel axis of an (N, 1, C, H * W) view.
std::vector<Value> lrn(NodeContext& ctx) {
  std::vector<PrimExpr> s = ctx.shape(0);
  if (s.size() < 3) ctx.fail("the input must have rank >= 3");
  const int64_t size = ctx.attr_int("size", 0);
  if (size <= 0) ctx.fail("size must be positive");
  const double alpha = ctx.attr_float("alpha", 1e-4), beta = ctx.attr_float("beta", 0.75), bias = ctx.attr_float("bias", 1.0);
  DataType dt = ctx.dtype(0);
  Expr x = ctx.input(0);
  PrimExpr spatial = int_imm(1);
  for (size_t k = 2; k < s.size(); ++k) spatial = spatial * s[k];
  Expr sq = ctx.emit(op::multiply(x, x));
  sq = ctx.emit(op::reshape(sq, std::vector<PrimExpr>{s[0], int_imm(1), s[1], spatial}));
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  // The average over the window (zeros past the channel ends count): alpha / size * sum is
  // alpha * average.
  Expr avg = ctx.emit(op::nn::avg_pool2d(sq, {size, 1}, {1, 1}, {before, 0, after, 0}, {1, 1}, false, true));
  avg = ctx.emit(op::reshape(avg, s));
  Expr den = ctx.emit(op::add(ctx.emit(op::multiply(avg, ctx.scalar(alpha, dt))), ctx.scalar(bias, dt)));
  return one(op::divide(x, ctx.emit(op::power(den, ctx.scalar(beta, dt)))));
}

std::vector<Value> mean_variance_normalization(NodeContext& ctx) {
  int nd = ctx.ndim(0);
  IntList axes = ctx.attr_ints("axes").value_or(IntList{0, 2, 3});
  for (auto& a : axes) a = norm_axis(ctx, a, nd);
  DataType dt = ctx.dtype(0);
  Expr x = ctx.input(0);
  Expr mean = ctx.emit(op::mean(x, axes, true));
  Expr stddev = ctx.emit(op::sqrt(ctx.emit(op::variance(x, axes, true))));
  return one(op::divide(ctx.emit(op::subtract(x, mean)), ctx.emit(op::add(stddev, ctx.scalar(1e-9, dt)))));
}

}  // namespace

void register_nn(std::map<std::string, ConvertFn>& t) {
  t["Resize"] = resize;
  t["ConvTranspose"] = conv_transpose;
  t["LRN"] = lrn;
  t["MeanVarianceNormalization"] = mean_variance_normalization;
  t["MatMul"] = [](NodeContext& ctx) {
    Expr a = ctx.input(0), b = ctx.input(1);
    unify_float_dtypes(ctx, a, b);  // .half() exports: a float32 operand meeting a float16 one
    return one(op::matmul(a, b));
  };
  t["Gemm"] = [](NodeContext& ctx) {
    Expr a = ctx.input(0), b = ctx.input(1);
    unify_float_dtypes(ctx, a, b);
    const auto* at = a->struct_info_ ? a->struct_info_.as<TensorStructInfoNode>() : nullptr;
    const DataType dt = at ? at->dtype : ctx.dtype(0);  // after unifying
    if (ctx.attr_int("transA", 0)) a = ctx.emit(op::permute_dims(a, IntList{1, 0}));
    if (ctx.attr_int("transB", 0)) b = ctx.emit(op::permute_dims(b, IntList{1, 0}));
    double alpha = ctx.attr_float("alpha", 1.0), beta = ctx.attr_float("beta", 1.0);
    Expr y = ctx.emit(op::matmul(a, b));
    if (alpha != 1.0) y = ctx.emit(op::multiply(y, ctx.scalar(alpha, dt)));
    if (!ctx.has_input(2)) return one(y);
    Expr c = ctx.input(2);
    unify_float_dtypes(ctx, y, c);  // a float32 bias of a .half() export (a GPT block's in-projection)
    if (beta != 1.0) c = ctx.emit(op::multiply(c, ctx.scalar(beta, dt)));
    return one(op::add(y, c));
  };
  t["Conv"] = conv;
  t["MaxPool"] = [](NodeContext& ctx) { return pool(ctx, true); };
  t["AveragePool"] = [](NodeContext& ctx) { return pool(ctx, false); };
  t["GlobalAveragePool"] = [](NodeContext& ctx) { return global_pool(ctx, false); };
  t["GlobalMaxPool"] = [](NodeContext& ctx) { return global_pool(ctx, true); };
  t["BatchNormalization"] = [](NodeContext& ctx) {
    if (ctx.attr_int("training_mode", 0) != 0 || ctx.num_outputs() > 1)
      ctx.fail("only inference mode (one output) is supported", "NotImplementedError");
    Expr bn = ctx.emit(op::nn::batch_norm(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), 1,
                                          ctx.attr_float("epsilon", 1e-5), true, true, 0.1, false));
    return one(make<TupleGetItemNode>(bn, 0));
  };
  t["LayerNormalization"] = [](NodeContext& ctx) {
    int nd = ctx.ndim(0);
    int64_t axis = norm_axis(ctx, ctx.attr_int("axis", -1), nd);
    IntList axes;
    for (int64_t k = axis; k < nd; ++k) axes.push_back(k);
    double eps = ctx.attr_float("epsilon", 1e-5);
    Expr x = ctx.input(0), scale = ctx.input(1);
    Expr bias = ctx.has_input(2) ? ctx.input(2) : ctx.emit(op::zeros_like(scale));
    unify_float_dtypes(ctx, x, scale);  // .half() exports: float32 data meeting a float16 scale
    unify_float_dtypes(ctx, scale, bias);
    std::vector<Value> outs = one(op::nn::layer_norm(x, scale, bias, axes, eps));
    if (ctx.num_outputs() > 1) {
      // The optional statistics outputs (mean and 1/stddev over the normalized axes).
      Expr mean = ctx.emit(op::mean(x, axes, true));
      Expr var = ctx.emit(op::variance(x, axes, true));
      outs.push_back(Value{mean, std::nullopt});
      outs.push_back(Value{op::rsqrt(ctx.emit(op::add(var, ctx.scalar(eps, ctx.dtype(0))))), std::nullopt});
    }
    return outs;
  };
  t["InstanceNormalization"] = [](NodeContext& ctx) {
    int nd = ctx.ndim(0);
    if (nd < 3) ctx.fail("input must have rank >= 3");
    DataType dt = ctx.dtype(0);
    IntList axes;
    for (int k = 2; k < nd; ++k) axes.push_back(k);
    Expr x = ctx.input(0);
    const double eps = ctx.attr_float("epsilon", 1e-5);
    Expr y;
    // The normalization over the spatial axes is a layer norm over them (which backends run
    // in one pass, with float statistics whatever the storage type) with a unit scale; the
    // per-channel scale and bias follow.
    auto spatial = static_shape(make<TensorStructInfoNode>(ctx.shape(0), dt));
    if (spatial && dt.is_float()) {
      std::vector<int64_t> sshape(spatial->begin() + 2, spatial->end());
      Expr ones = ctx.full(sshape, 1, dt, "the unit scale"), zeros = ctx.full(sshape, 0, dt, "the zero bias");
      y = ctx.emit(op::nn::layer_norm(x, ones, zeros, axes, eps));
    } else {
      Expr mean = ctx.emit(op::mean(x, axes, true));
      Expr var = ctx.emit(op::variance(x, axes, true));
      Expr den = ctx.emit(op::sqrt(ctx.emit(op::add(var, ctx.scalar(eps, dt)))));
      y = ctx.emit(op::divide(ctx.emit(op::subtract(x, mean)), den));
    }
    std::vector<PrimExpr> pshape{int_imm(-1)};
    for (int k = 2; k < nd; ++k) pshape.push_back(int_imm(1));
    y = ctx.emit(op::multiply(y, ctx.emit(op::reshape(ctx.input(1), pshape))));
    return one(op::add(y, ctx.emit(op::reshape(ctx.input(2), pshape))));
  };
  t["Softmax"] = [](NodeContext& ctx) { return one(op::nn::softmax(ctx.input(0), ctx.attr_int("axis", -1))); };
  t["LogSoftmax"] = [](NodeContext& ctx) {
    return one(op::nn::log_softmax(ctx.input(0), ctx.attr_int("axis", -1)));
  };
}

}  // namespace partita::frontend::onnx_detail
