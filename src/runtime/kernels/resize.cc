// image.resize2d: nearest, linear and cubic interpolation over the spatial axes of NCHW or NHWC
// data, with ONNX's coordinate transformations (the scale of an axis is its output size over
// its input size) and rounding modes. Interpolation is separable: each output row and column
// gets its input taps and weights once, the width is resized first, then the height.
#include <cmath>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

/// Input taps and weights of each output coordinate of one axis.
struct AxisTaps {
  int taps = 1;
  std::vector<int64_t> index;  // out * taps
  std::vector<double> weight;  // out * taps
};

double source_coordinate(const std::string& mode, int64_t x, int64_t in, int64_t out) {
  const double scale = double(out) / double(in);
  if (mode == "half_pixel") return (double(x) + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (double(x) + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return out == 1 ? 0.0 : double(x) * double(in - 1) / double(out - 1);
  if (mode == "asymmetric") return double(x) / scale;
  if (mode == "tf_half_pixel_for_nn") return (double(x) + 0.5) / scale;
  throw_error("ValueError", "resize2d: unsupported coordinate_transformation_mode '" + mode + "'");
}

int64_t round_nearest(double v, const std::string& rounding) {
  double f = std::floor(v);
  bool half = v - f == 0.5;
  if (rounding == "floor") return int64_t(f);
  if (rounding == "ceil") return int64_t(std::ceil(v));
  if (rounding == "round_prefer_ceil") return int64_t(half ? f + 1 : std::round(v));
  if (rounding == "round_prefer_floor" || rounding.empty()) return int64_t(half ? f : std::round(v));
  if (rounding == "round") return int64_t(std::round(v));  // half away from zero
  throw_error("ValueError", "resize2d: unsupported rounding_method '" + rounding + "'");
}

double cubic_weight(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

AxisTaps axis_taps(const KernelAttrs& attrs, int64_t in, int64_t out) {
  const std::string method = attrs.get_string("method", "linear");
  const std::string mode = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  AxisTaps t;
  t.taps = method == "nearest_neighbor" ? 1 : method == "linear" ? 2 : 4;
  t.index.resize(size_t(out * t.taps));
  t.weight.resize(size_t(out * t.taps));
  auto clampi = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t x = 0; x < out; ++x) {
    double s = source_coordinate(mode, x, in, out);
    int64_t* idx = &t.index[size_t(x * t.taps)];
    double* w = &t.weight[size_t(x * t.taps)];
    if (method == "nearest_neighbor") {
      idx[0] = clampi(round_nearest(s, attrs.get_string("rounding_method", "round_prefer_floor")));
      w[0] = 1;
    } else if (method == "linear") {
      double f = std::floor(s), r = s - f;
      idx[0] = clampi(int64_t(f));
      idx[1] = clampi(int64_t(f) + 1);
      w[0] = 1 - r;
      w[1] = r;
    } else {
      const double a = attrs.get_float("cubic_alpha", -0.5);
      const bool exclude = attrs.get_int("cubic_exclude", 0) != 0;
      double f = std::floor(s), r = s - f, total = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t i = int64_t(f) - 1 + k;
        w[k] = cubic_weight(r - double(k - 1), a);
        if (exclude && (i < 0 || i >= in)) w[k] = 0;
        idx[k] = clampi(i);
        total += w[k];
      }
      if (exclude && total != 0)
        for (int k = 0; k < 4; ++k) w[k] /= total;
    }
  }
  return t;
}

void k_resize2d(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  if (x.ndim() != 4) throw_error("ValueError", "resize2d: data must be 4-D");
  const bool nchw = attrs.get_string("layout", "NCHW") == "NCHW";
  const int hd = nchw ? 2 : 1, wd = hd + 1, cd = nchw ? 1 : 3;
  const int64_t n = x.shape()[0], c = x.shape()[size_t(cd)];
  const int64_t ih = x.shape()[size_t(hd)], iw = x.shape()[size_t(wd)];
  const int64_t oh = y.shape()[size_t(hd)], ow = y.shape()[size_t(wd)];
  if (ih == 0 || iw == 0) throw_error("ValueError", "resize2d: the input has an empty spatial axis");
  AxisTaps th = axis_taps(attrs, ih, oh), tw = axis_taps(attrs, iw, ow);
  // A plane is one (n, c) image in NCHW, one n image with `inner` = c interleaved channels in
  // NHWC. Separable: every input row is first resized along the width into `rows`, then each
  // output row blends the rows its taps name; both loops run along contiguous memory.
  const int64_t planes = nchw ? n * c : n, inner = nchw ? 1 : c;
  dispatch_float(x.dtype(), "resize2d", [&](auto tin) {
    using T = decltype(tin);
    dispatch_float(y.dtype(), "resize2d", [&](auto tout) {
      using U = decltype(tout);
      using Acc = std::conditional_t<(sizeof(T) > 4 || sizeof(U) > 4), double, float>;
      std::vector<Acc> rows(size_t(ih * ow * inner));
      std::vector<Acc> wh(th.weight.begin(), th.weight.end()), ww(tw.weight.begin(), tw.weight.end());
      for (int64_t p = 0; p < planes; ++p) {
        const T* src = x.data_as<T>() + p * ih * iw * inner;
        U* dst = y.data_as<U>() + p * oh * ow * inner;
        for (int64_t r = 0; r < ih; ++r) {
          const T* row = src + r * iw * inner;
          Acc* out_row = rows.data() + r * ow * inner;
          for (int64_t j = 0; j < ow; ++j)
            for (int64_t k = 0; k < inner; ++k) {
              Acc acc = 0;
              for (int q = 0; q < tw.taps; ++q)
                acc += ww[size_t(j * tw.taps + q)] * Acc(row[tw.index[size_t(j * tw.taps + q)] * inner + k]);
              out_row[j * inner + k] = acc;
            }
        }
        const int64_t row_len = ow * inner;
        for (int64_t i = 0; i < oh; ++i) {
          U* o = dst + i * row_len;
          const Acc w0 = wh[size_t(i * th.taps)];
          const Acc* r0 = rows.data() + th.index[size_t(i * th.taps)] * row_len;
          for (int64_t e = 0; e < row_len; ++e) o[e] = U(w0 * r0[e]);
          for (int a = 1; a < th.taps; ++a) {
            const Acc wa = wh[size_t(i * th.taps + a)];
            const Acc* ra = rows.data() + th.index[size_t(i * th.taps + a)] * row_len;
            for (int64_t e = 0; e < row_len; ++e) o[e] = U(Acc(o[e]) + wa * ra[e]);
          }
        }
      }
    });
  });
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.image.resize2d", k_resize2d);

}  // namespace partita::runtime::kernels
