// Reductions over axes (sum, mean, max, min, variance, prod) and softmax / log_softmax.
#include <algorithm>
#include <limits>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

enum class Red { Sum, Mean, Max, Min, Var, Prod };

/// Reduced-axis mask of rank `nd` from the "axis" attribute (None: all axes).
std::vector<bool> reduced_mask(const KernelAttrs& attrs, int nd, const char* op) {
  std::vector<bool> mask(size_t(nd), !attrs.has("axis"));
  for (int64_t a : attrs.get_ints("axis")) mask[size_t(normalize_axis(a, nd, op))] = true;
  return mask;
}

template <Red R>
void reduce(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out, const char* op) {
  const Tensor& x = in[0];
  int nd = x.ndim();
  auto mask = reduced_mask(attrs, nd, op);
  // Input strides mapped into the output (0 on reduced axes).
  std::vector<int64_t> out_shape_full(x.shape());
  for (int d = 0; d < nd; ++d)
    if (mask[size_t(d)]) out_shape_full[size_t(d)] = 1;
  auto ostr = bcast_strides(out_shape_full, x.shape());
  auto istr = contiguous_strides(x.shape());
  int64_t n_out = out[0].numel();
  int64_t group = n_out ? x.numel() / std::max<int64_t>(n_out, 1) : 0;
  auto body = [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double,
                                   std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
    const T* px = x.data_as<T>();
    T* po = out[0].data_as<T>();
    std::vector<Acc> acc(size_t(n_out), Acc(0));
    std::vector<bool> seen;
    if constexpr (R == Red::Max || R == Red::Min) {
      if (group == 0 && n_out > 0) throw_error("ValueError", std::string(op) + ": reduction over an empty axis");
      seen.assign(size_t(n_out), false);
    }
    // Trailing axes reduced (a global pool: NCHW over H, W): each output sums one contiguous run.
    bool trailing = nd > 0 && mask[size_t(nd - 1)];
    for (int d = 1; trailing && d < nd; ++d) trailing = !mask[size_t(d - 1)] || mask[size_t(d)];
    if constexpr (R == Red::Sum || R == Red::Mean) {
      if (trailing && group > 0) {
        for (int64_t o = 0; o < n_out; ++o) {
          Acc sum = 0;
          const T* run = px + o * group;
          for (int64_t i = 0; i < group; ++i) sum += Acc(run[i]);
          po[o] = R == Red::Mean ? T(double(sum) / double(group)) : T(sum);
        }
        return;
      }
    }
    std::vector<int64_t> st[2] = {istr, ostr};
    auto accumulate = [&](auto&& f) {
      for_each_run(x.shape(), st, [&](const int64_t* offs, const int64_t* inner, int64_t len, int64_t) {
        for (int64_t i = 0; i < len; ++i) f(px[offs[0] + i * inner[0]], offs[1] + i * inner[1]);
      });
    };
    if constexpr (R == Red::Prod) {
      std::fill(acc.begin(), acc.end(), Acc(1));
      accumulate([&](T v, int64_t o) { acc[size_t(o)] *= Acc(v); });
      for (int64_t o = 0; o < n_out; ++o) po[o] = T(acc[size_t(o)]);
    } else if constexpr (R == Red::Sum || R == Red::Mean || R == Red::Var) {
      accumulate([&](T v, int64_t o) { acc[size_t(o)] += Acc(v); });
      if constexpr (R == Red::Var) {
        std::vector<double> mean(static_cast<size_t>(n_out));
        for (int64_t o = 0; o < n_out; ++o) mean[size_t(o)] = double(acc[size_t(o)]) / double(group);
        std::vector<double> sq(size_t(n_out), 0.0);
        accumulate([&](T v, int64_t o) {
          double d = double(v) - mean[size_t(o)];
          sq[size_t(o)] += d * d;
        });
        for (int64_t o = 0; o < n_out; ++o) po[o] = T(sq[size_t(o)] / double(group));
      } else if constexpr (R == Red::Mean) {
        for (int64_t o = 0; o < n_out; ++o) po[o] = T(double(acc[size_t(o)]) / double(group));
      } else {
        for (int64_t o = 0; o < n_out; ++o) po[o] = T(acc[size_t(o)]);
      }
    } else {
      accumulate([&](T v, int64_t o) {
        if (!seen[size_t(o)]) {
          seen[size_t(o)] = true;
          po[o] = v;
        } else if constexpr (R == Red::Max) {
          if (v > po[o] || v != v) po[o] = v;
        } else {
          if (v < po[o] || v != v) po[o] = v;
        }
      });
    }
  };
  if constexpr (R == Red::Mean || R == Red::Var) dispatch_float(x.dtype(), op, body);
  else dispatch(x.dtype(), op, body);
}

void k_sum(std::span<const Tensor> in, const KernelAttrs& a, std::span<Tensor> out) { reduce<Red::Sum>(in, a, out, "sum"); }
void k_mean(std::span<const Tensor> in, const KernelAttrs& a, std::span<Tensor> out) { reduce<Red::Mean>(in, a, out, "mean"); }
void k_max(std::span<const Tensor> in, const KernelAttrs& a, std::span<Tensor> out) { reduce<Red::Max>(in, a, out, "max"); }
void k_min(std::span<const Tensor> in, const KernelAttrs& a, std::span<Tensor> out) { reduce<Red::Min>(in, a, out, "min"); }
void k_prod(std::span<const Tensor> in, const KernelAttrs& a, std::span<Tensor> out) { reduce<Red::Prod>(in, a, out, "prod"); }
void k_variance(std::span<const Tensor> in, const KernelAttrs& a, std::span<Tensor> out) {
  reduce<Red::Var>(in, a, out, "variance");
}

template <bool Log>
void softmax(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  const char* op = Log ? "log_softmax" : "softmax";
  int axis = normalize_axis(attrs.get_int("axis", -1), x.ndim(), op);
  int64_t outer = 1, len = x.ndim() ? x.shape()[size_t(axis)] : 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int d = axis + 1; d < x.ndim(); ++d) inner *= x.shape()[size_t(d)];
  dispatch_float(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data_as<T>();
    T* po = out[0].data_as<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* a = px + o * len * inner + i;
        T* b = po + o * len * inner + i;
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t k = 0; k < len; ++k) m = std::max(m, a[k * inner]);
        double s = 0;
        for (int64_t k = 0; k < len; ++k) s += std::exp(double(a[k * inner] - m));
        if constexpr (Log) {
          T ls = T(std::log(s));
          for (int64_t k = 0; k < len; ++k) b[k * inner] = a[k * inner] - m - ls;
        } else {
          for (int64_t k = 0; k < len; ++k) b[k * inner] = T(std::exp(double(a[k * inner] - m)) / s);
        }
      }
  });
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.sum", k_sum);
PARTITA_REGISTER_KERNEL("relax.mean", k_mean);
PARTITA_REGISTER_KERNEL("relax.max", k_max);
PARTITA_REGISTER_KERNEL("relax.min", k_min);
PARTITA_REGISTER_KERNEL("relax.variance", k_variance);
PARTITA_REGISTER_KERNEL("relax.prod", k_prod);
PARTITA_REGISTER_KERNEL("relax.nn.softmax", softmax<false>);
PARTITA_REGISTER_KERNEL("relax.nn.log_softmax", softmax<true>);

}  // namespace partita::runtime::kernels
