// flip (one axis reversed) and tile (the tensor repeated along each axis): byte copies, so
// every dtype works.
#include <cstring>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

void k_flip(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  int axis = normalize_axis(attrs.get_int("axis", 0), x.ndim(), "flip");
  int64_t outer = 1, len = x.shape()[size_t(axis)], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int d = axis + 1; d < x.ndim(); ++d) inner *= x.shape()[size_t(d)];
  size_t row = size_t(inner) * size_t(x.dtype().bytes());
  const uint8_t* src = static_cast<const uint8_t*>(x.data());
  uint8_t* dst = static_cast<uint8_t*>(out[0].data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < len; ++k)
      std::memcpy(dst + size_t(o * len + k) * row, src + size_t(o * len + (len - 1 - k)) * row, row);
}

void k_tile(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  const int nd = y.ndim();
  // The input as rank nd (leading 1s); each output coordinate reads coordinate % input dim.
  std::vector<int64_t> xshape(size_t(nd), 1);
  for (int d = 0; d < x.ndim(); ++d) xshape[size_t(nd - x.ndim() + d)] = x.shape()[size_t(d)];
  if (y.numel() == 0) return;
  auto xs = contiguous_strides(xshape);
  size_t es = size_t(x.dtype().bytes());
  const uint8_t* src = static_cast<const uint8_t*>(x.data());
  uint8_t* dst = static_cast<uint8_t*>(y.data());
  const int64_t last = nd ? xshape.back() : 1;
  std::vector<int64_t> coord(size_t(nd), 0);
  int64_t o = 0;
  // One run along the last axis at a time: whole copies of the input row, then the remainder.
  while (true) {
    int64_t base = 0;
    for (int d = 0; d + 1 < nd; ++d) base += (coord[size_t(d)] % xshape[size_t(d)]) * xs[size_t(d)];
    int64_t len = nd ? y.shape().back() : 1;
    for (int64_t k = 0; k < len; k += last)
      std::memcpy(dst + size_t(o + k) * es, src + size_t(base) * es, size_t(std::min(last, len - k)) * es);
    o += len;
    int d = nd - 2;
    for (; d >= 0; --d) {
      if (++coord[size_t(d)] < y.shape()[size_t(d)]) break;
      coord[size_t(d)] = 0;
    }
    if (d < 0) break;
  }
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.flip", k_flip);
PARTITA_REGISTER_KERNEL("relax.tile", k_tile);

}  // namespace partita::runtime::kernels
