// tril / triu over the last two axes and cumsum along one axis.
#include <cstring>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

template <bool Lower>
void triangle(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  if (x.ndim() < 2) throw_error("ValueError", "tril/triu: the input must have rank >= 2");
  const int64_t k = attrs.get_int("k", 0);
  const int64_t rows = x.shape()[size_t(x.ndim() - 2)], cols = x.shape().back();
  const int64_t mats = (rows > 0 && cols > 0) ? x.numel() / (rows * cols) : 0;
  const size_t es = size_t(x.dtype().bytes());
  const uint8_t* src = static_cast<const uint8_t*>(x.data());
  uint8_t* dst = static_cast<uint8_t*>(out[0].data());
  std::memset(dst, 0, out[0].nbytes());
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i) {
      // Lower keeps columns j <= i + k, upper keeps j >= i + k.
      int64_t j0 = Lower ? 0 : std::clamp<int64_t>(i + k, 0, cols);
      int64_t j1 = Lower ? std::clamp<int64_t>(i + k + 1, 0, cols) : cols;
      if (j1 > j0) {
        size_t at = size_t((m * rows + i) * cols + j0) * es;
        std::memcpy(dst + at, src + at, size_t(j1 - j0) * es);
      }
    }
}

void k_cumsum(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  Tensor x = in[0];
  int axis = 0;
  if (!attrs.has("axis")) x = Tensor::from_buffer({x.numel()}, x.dtype(), x.buffer());
  else axis = normalize_axis(attrs.get_int("axis", 0), x.ndim(), "cumsum");
  const bool exclusive = attrs.get_bool("exclusive", false);
  Tensor src = x;
  if (!(x.dtype() == out[0].dtype())) {  // accumulate in the output's dtype
    src = Tensor::empty(x.shape(), out[0].dtype());
    convert(x, src);
  }
  int64_t outer = 1, len = src.ndim() ? src.shape()[size_t(axis)] : 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= src.shape()[size_t(d)];
  for (int d = axis + 1; d < src.ndim(); ++d) inner *= src.shape()[size_t(d)];
  dispatch(out[0].dtype(), "cumsum", [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    const T* px = src.data_as<T>();
    T* po = out[0].data_as<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        Acc acc = Acc(0);
        for (int64_t k = 0; k < len; ++k) {
          int64_t at = (o * len + k) * inner + i;
          if (exclusive) {
            po[at] = T(acc);
            acc += Acc(px[at]);
          } else {
            acc += Acc(px[at]);
            po[at] = T(acc);
          }
        }
      }
  });
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.tril", triangle<true>);
PARTITA_REGISTER_KERNEL("relax.triu", triangle<false>);
PARTITA_REGISTER_KERNEL("relax.cumsum", k_cumsum);

}  // namespace partita::runtime::kernels
