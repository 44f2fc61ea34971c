// Searching along an axis: argmax / argmin (the first extreme element; NaN counts as the
// extreme, as in numpy) and topk (the k largest or smallest, sorted, ties by lower index as ONNX
// requires).
#include <algorithm>
#include <numeric>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

/// (outer, length, inner) of `shape` around `axis`.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisSplit split_at(const std::vector<int64_t>& shape, int axis) {
  AxisSplit s;
  for (int d = 0; d < int(shape.size()); ++d) {
    if (d < axis) s.outer *= shape[size_t(d)];
    else if (d == axis) s.len = shape[size_t(d)];
    else s.inner *= shape[size_t(d)];
  }
  return s;
}

template <bool Max>
void arg_extreme(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out, const char* op) {
  Tensor x = in[0];
  int axis = 0;
  if (!attrs.has("axis")) x = Tensor::from_buffer({x.numel()}, x.dtype(), x.buffer());
  else axis = normalize_axis(attrs.get_int("axis", 0), x.ndim(), op);
  AxisSplit s = split_at(x.shape(), axis);
  if (s.len == 0) throw_error("ValueError", std::string(op) + ": the axis is empty");
  int64_t* po = out[0].data_as<int64_t>();
  dispatch(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data_as<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* a = px + o * s.len * s.inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < s.len; ++k) {
          T v = a[k * s.inner], b = a[best * s.inner];
          if (b != b) break;  // a NaN is the answer
          if (v != v || (Max ? v > b : v < b)) best = k;
        }
        po[o * s.inner + i] = best;
      }
  });
}

void k_argmax(std::span<const Tensor> in, const KernelAttrs& a, std::span<Tensor> out) {
  arg_extreme<true>(in, a, out, "argmax");
}
void k_argmin(std::span<const Tensor> in, const KernelAttrs& a, std::span<Tensor> out) {
  arg_extreme<false>(in, a, out, "argmin");
}

template <class I>
void store_index(Tensor& t, int64_t at, int64_t v) {
  t.data_as<I>()[at] = I(v);
}

void k_topk(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  int axis = normalize_axis(attrs.get_int("axis", -1), x.ndim(), "topk");
  int64_t k = attrs.get_int("k", 1);
  bool largest = attrs.get_bool("largest", true);
  std::string ret = attrs.get_string("ret_type", "both");
  AxisSplit s = split_at(x.shape(), axis);
  if (k > s.len) throw_error("ValueError", "topk: k exceeds the size of the axis");
  Tensor* values = ret == "indices" ? nullptr : &out[0];
  Tensor* indices = ret == "values" ? nullptr : &out[ret == "both" ? 1 : 0];
  dispatch(x.dtype(), "topk", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data_as<T>();
    std::vector<int64_t> order(static_cast<size_t>(s.len));
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* a = px + o * s.len * s.inner + i;
        std::iota(order.begin(), order.end(), int64_t(0));
        auto before = [&](int64_t p, int64_t q) {
          T u = a[p * s.inner], v = a[q * s.inner];
          if (u == v) return p < q;
          return largest ? u > v : u < v;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          int64_t at = (o * k + j) * s.inner + i;
          if (values) values->data_as<T>()[at] = a[order[size_t(j)] * s.inner];
          if (indices) {
            dispatch(indices->dtype(), "topk", [&](auto itag) {
              using I = decltype(itag);
              if constexpr (std::is_floating_point_v<I>) throw_error("TypeError", "topk: indices must be integers");
              else store_index<I>(*indices, at, order[size_t(j)]);
            });
          }
        }
      }
  });
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.argmax", k_argmax);
PARTITA_REGISTER_KERNEL("relax.argmin", k_argmin);
PARTITA_REGISTER_KERNEL("relax.topk", k_topk);

}  // namespace partita::runtime::kernels
