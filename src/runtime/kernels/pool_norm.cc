// Pooling (max / avg with ceil_mode and count_include_pad, adaptive avg), batch_norm,
// layer_norm and pad. NCHW layouts.
#include <algorithm>
#include <limits>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

void check_nchw(const KernelAttrs& attrs, const char* op) {
  if (attrs.get_string("layout", "NCHW") != "NCHW" || attrs.get_string("out_layout", "NCHW") != "NCHW")
    throw_error("ValueError", std::string(op) + ": only the NCHW layout is supported on the host");
}

template <bool Max>
void pool2d(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const char* op = Max ? "max_pool2d" : "avg_pool2d";
  check_nchw(attrs, op);
  const Tensor& x = in[0];
  Tensor& y = out[0];
  auto ps = attrs.get_ints("pool_size", {1, 1});
  auto st = attrs.get_ints("strides", {1, 1});
  auto dil = attrs.get_ints("dilation", {1, 1});
  auto pad = attrs.get_ints("padding", {0, 0, 0, 0});
  if (ps.size() == 1) ps = {ps[0], ps[0]};
  if (st.size() == 1) st = {st[0], st[0]};
  if (dil.size() == 1) dil = {dil[0], dil[0]};
  if (pad.size() == 1) pad = {pad[0], pad[0], pad[0], pad[0]};
  if (pad.size() == 2) pad = {pad[0], pad[1], pad[0], pad[1]};
  bool include_pad = attrs.get_bool("count_include_pad", false);
  int64_t NC = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  int64_t OH = y.shape()[2], OW = y.shape()[3];
  dispatch(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t c = 0; c < NC; ++c) {
      const T* px = x.data_as<T>() + c * H * W;
      T* py = y.data_as<T>() + c * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          T best = std::numeric_limits<T>::lowest();
          double sum = 0;
          int64_t count = 0, padded = 0;
          for (int64_t kh = 0; kh < ps[0]; ++kh) {
            int64_t ih = oh * st[0] - pad[0] + kh * dil[0];
            for (int64_t kw = 0; kw < ps[1]; ++kw) {
              int64_t iw = ow * st[1] - pad[1] + kw * dil[1];
              // Positions inside the padded input count for count_include_pad.
              if (ih < H + pad[2] && iw < W + pad[3]) ++padded;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              T v = px[ih * W + iw];
              if (v > best) best = v;
              sum += double(v);
              ++count;
            }
          }
          if constexpr (Max) {
            py[oh * OW + ow] = best;
          } else {
            int64_t div = include_pad ? padded : count;
            py[oh * OW + ow] = div ? T(sum / double(div)) : T(0);
          }
        }
    }
  });
}

void k_adaptive_avg_pool2d(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  check_nchw(attrs, "adaptive_avg_pool2d");
  const Tensor& x = in[0];
  Tensor& y = out[0];
  int64_t NC = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  int64_t OH = y.shape()[2], OW = y.shape()[3];
  dispatch(x.dtype(), "adaptive_avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    for (int64_t c = 0; c < NC; ++c) {
      const T* px = x.data_as<T>() + c * H * W;
      T* py = y.data_as<T>() + c * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
          double s = 0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) s += double(px[h * W + w]);
          py[oh * OW + ow] = T(s / double((h1 - h0) * (w1 - w0)));
        }
      }
    }
  });
}

// Outputs: (normalized, new moving mean, new moving var). In training mode the batch statistics
// normalize and update the moving ones (with `momentum`); otherwise the moving ones are used.
void k_batch_norm(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  int axis = normalize_axis(attrs.get_int("axis", 1), x.ndim(), "batch_norm");
  double eps = attrs.get_float("epsilon", 1e-5), mom = attrs.get_float("momentum", 0.1);
  bool center = attrs.get_bool("center", true), scale = attrs.get_bool("scale", true);
  bool training = attrs.get_bool("training", true);
  int64_t C = x.shape()[size_t(axis)], outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int d = axis + 1; d < x.ndim(); ++d) inner *= x.shape()[size_t(d)];
  dispatch_float(x.dtype(), "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data_as<T>();
    const T *g = in[1].data_as<T>(), *b = in[2].data_as<T>(), *mm = in[3].data_as<T>(), *mv = in[4].data_as<T>();
    T* py = out[0].data_as<T>();
    for (int64_t c = 0; c < C; ++c) {
      double mean = double(mm[c]), var = double(mv[c]);
      if (training) {
        double s = 0, sq = 0, n = double(outer * inner);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) s += double(px[(o * C + c) * inner + i]);
        mean = s / n;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double d = double(px[(o * C + c) * inner + i]) - mean;
            sq += d * d;
          }
        var = sq / n;
      }
      double inv = 1.0 / std::sqrt(var + eps);
      double gg = scale ? double(g[c]) : 1.0, bb = center ? double(b[c]) : 0.0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t k = (o * C + c) * inner + i;
          py[k] = T((double(px[k]) - mean) * inv * gg + bb);
        }
      if (out.size() > 2) {
        out[1].data_as<T>()[c] = training ? T((1 - mom) * double(mm[c]) + mom * mean) : mm[c];
        out[2].data_as<T>()[c] = training ? T((1 - mom) * double(mv[c]) + mom * var) : mv[c];
      }
    }
  });
}

// Normalizes over the trailing `axes` (which must be the last dims, as TVM requires).
void k_layer_norm(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  int nd = x.ndim();
  auto axes = attrs.get_ints("axes");
  std::vector<bool> mask(size_t(nd), false);
  for (int64_t a : axes) mask[size_t(normalize_axis(a, nd, "layer_norm"))] = true;
  int k = int(axes.size());
  for (int d = 0; d < nd; ++d)
    if (mask[size_t(d)] != (d >= nd - k))
      throw_error("ValueError", "layer_norm: the normalized axes must be the trailing dimensions");
  int64_t inner = 1, outer = 1;
  for (int d = 0; d < nd; ++d) (d >= nd - k ? inner : outer) *= x.shape()[size_t(d)];
  double eps = attrs.get_float("epsilon", 1e-5);
  bool center = attrs.get_bool("center", true), scale = attrs.get_bool("scale", true);
  // 16-bit tensors too (InstanceNormalization of .half() exports imports as a layer norm),
  // with statistics in double as for the others.
  dispatch_float_with_float16(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data_as<T>();
    const T *g = in[1].data_as<T>(), *b = in[2].data_as<T>();
    T* py = out[0].data_as<T>();
    for (int64_t o = 0; o < outer; ++o) {
      const T* r = px + o * inner;
      double s = 0, sq = 0;
      for (int64_t i = 0; i < inner; ++i) s += load_real(r, i);
      double mean = s / double(inner);
      for (int64_t i = 0; i < inner; ++i) sq += (load_real(r, i) - mean) * (load_real(r, i) - mean);
      double inv = 1.0 / std::sqrt(sq / double(inner) + eps);
      for (int64_t i = 0; i < inner; ++i)
        store_real(py, o * inner + i, (load_real(r, i) - mean) * inv * (scale ? load_real(g, i) : 1.0) +
                                          (center ? load_real(b, i) : 0.0));
    }
  });
}

// pad_width holds (before, after) per axis; modes "constant", "edge", "reflect". Each output
// coordinate's source coordinate is worked out once per axis (-1: the fill value); rows along
// the last axis are then gathered through that map.
void k_pad(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  int nd = x.ndim();
  auto pw = attrs.get_ints("pad_width");
  if (pw.size() != size_t(2 * nd)) throw_error("ValueError", "pad: pad_width must have 2 entries per axis");
  std::string mode = attrs.get_string("pad_mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    throw_error("ValueError", "pad: unsupported pad_mode '" + mode + "'");
  double value = attrs.get_float("pad_value", 0.0);
  auto xs = contiguous_strides(x.shape());
  std::vector<std::vector<int64_t>> source(static_cast<size_t>(nd));
  for (int d = 0; d < nd; ++d) {
    const int64_t dim = x.shape()[size_t(d)];
    for (int64_t o = 0; o < y.shape()[size_t(d)]; ++o) {
      int64_t i = o - pw[size_t(2 * d)];
      if (i < 0 || i >= dim) {
        if (mode == "constant" || dim == 0) {
          i = -1;
        } else if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, dim - 1);
        } else {
          int64_t period = dim == 1 ? 1 : 2 * (dim - 1);
          i = ((i % period) + period) % period;
          if (i >= dim) i = period - i;
        }
      }
      source[size_t(d)].push_back(i);
    }
  }
  if (y.numel() == 0) return;
  dispatch(x.dtype(), "pad", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data_as<T>();
    T* py = y.data_as<T>();
    const T fill = T(value);
    if (nd == 0) {
      py[0] = px[0];
      return;
    }
    const int64_t row = y.shape().back();
    const std::vector<int64_t>& last = source.back();
    std::vector<int64_t> idx(size_t(nd - 1), 0);  // output coordinates of the row
    for (int64_t o = 0; o < y.numel(); o += row) {
      int64_t off = 0;
      bool inside = true;
      for (int d = 0; d + 1 < nd && inside; ++d) {
        int64_t i = source[size_t(d)][size_t(idx[size_t(d)])];
        inside = i >= 0;
        off += i * xs[size_t(d)];
      }
      if (!inside) {
        std::fill_n(py + o, row, fill);
      } else {
        const T* src = px + off;
        for (int64_t j = 0; j < row; ++j) py[o + j] = last[size_t(j)] >= 0 ? src[last[size_t(j)]] : fill;
      }
      for (int d = nd - 2; d >= 0; --d) {
        if (++idx[size_t(d)] < y.shape()[size_t(d)]) break;
        idx[size_t(d)] = 0;
      }
    }
  });
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.nn.max_pool2d", pool2d<true>);
PARTITA_REGISTER_KERNEL("relax.nn.avg_pool2d", pool2d<false>);
PARTITA_REGISTER_KERNEL("relax.nn.adaptive_avg_pool2d", k_adaptive_avg_pool2d);
PARTITA_REGISTER_KERNEL("relax.nn.batch_norm", k_batch_norm);
PARTITA_REGISTER_KERNEL("relax.nn.layer_norm", k_layer_norm);
PARTITA_REGISTER_KERNEL("relax.nn.pad", k_pad);

}  // namespace partita::runtime::kernels
