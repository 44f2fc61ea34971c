// Data movement and creation: permute_dims, broadcast_to, concat, split, strided_slice, take,
// ones / zeros / full (and *_like). Byte-level copies, so every dtype works.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

/// d[i] = s[i * stride] for `len` elements of ES bytes (a fixed size, so each copy is one move).
template <size_t ES>
void copy_run(uint8_t* d, const uint8_t* s, int64_t len, std::ptrdiff_t stride) {
  for (int64_t i = 0; i < len; ++i) std::memcpy(d + i * std::ptrdiff_t(ES), s + i * stride * std::ptrdiff_t(ES), ES);
}

/// `f` instantiated for the element size `es` (1, 2, 4 or 8 bytes); false for other sizes.
template <class F>
bool with_element_size(size_t es, F&& f) {
  switch (es) {
    case 1: f(std::integral_constant<size_t, 1>()); return true;
    case 2: f(std::integral_constant<size_t, 2>()); return true;
    case 4: f(std::integral_constant<size_t, 4>()); return true;
    case 8: f(std::integral_constant<size_t, 8>()); return true;
    default: return false;
  }
}

/// out[i] = in[offset(i)] for a strided view of `in`: shape of `out`, element strides `st`,
/// start element offset `base`. Copies element-size bytes.
void gather_strided(const Tensor& in, Tensor& out, const std::vector<int64_t>& st, int64_t base) {
  size_t es = size_t(in.dtype().bytes());
  const uint8_t* src = static_cast<const uint8_t*>(in.data());
  uint8_t* dst = static_cast<uint8_t*>(out.data());
  // Neighbouring output axes that are also neighbours in the input become one (size-1 axes
  // dropped), so runs are as long as the layouts allow: a channel shuffle's (1, 58, 2, 28, 28)
  // copies 116 runs of 784 elements, not 3,248 of 28.
  std::vector<int64_t> shape, strides[1];
  for (size_t d = 0; d < st.size(); ++d) {
    const int64_t n = out.shape()[d];
    if (n == 1) continue;
    if (!shape.empty() && strides[0].back() == st[d] * n) {
      shape.back() *= n;
      strides[0].back() = st[d];
    } else {
      shape.push_back(n);
      strides[0].push_back(st[d]);
    }
  }
  for_each_run(shape, strides, [&](const int64_t* offs, const int64_t* inner, int64_t len, int64_t o) {
    // Signed byte offsets: a negative stride (a reversed slice) steps back from `s`; as size_t
    // it would wrap around the address space (undefined pointer arithmetic, found by UBSan).
    const auto step = static_cast<std::ptrdiff_t>(es);
    const uint8_t* s = src + static_cast<std::ptrdiff_t>(base + offs[0]) * step;
    uint8_t* d = dst + static_cast<std::ptrdiff_t>(o) * step;
    if (inner[0] == 1) {
      std::memcpy(d, s, size_t(len) * es);
    } else if (!with_element_size(es, [&](auto size) { copy_run<size()>(d, s, len, inner[0]); })) {
      for (int64_t i = 0; i < len; ++i) std::memcpy(d + i * step, s + i * inner[0] * step, es);
    }
  });
}

/// A transpose whose output's fastest axis is strided in the input and whose input's fastest
/// axis is output axis `q`: copied in 32 x 32 tiles of those two axes, so reads and writes both
/// walk cache lines (gathering element by element read one input line per element: NCHW to
/// NHWC of convnext's 96 x 56 x 56 float32 activations: 1.5 ns an element for that loop in a
/// standalone program, 0.4 ns for this kernel through run_kernel, on this Intel machine).
template <size_t ES>
void tiled_permute(const uint8_t* src, uint8_t* dst, const std::vector<int64_t>& shape, const std::vector<int64_t>& st,
                   int q) {
  constexpr int64_t kTile = 32;
  const int last = int(shape.size()) - 1;
  const int64_t nq = shape[size_t(q)], nl = shape[size_t(last)], sl = st[size_t(last)];
  const std::vector<int64_t> os = contiguous_strides(shape);
  const int64_t oq = os[size_t(q)];
  // Every index of the other axes (q and the last set to one extent): the tiles' base offsets.
  std::vector<int64_t> outer = shape;
  outer[size_t(q)] = outer[size_t(last)] = 1;
  const std::vector<int64_t> strides[2] = {st, os};
  for_each_run(outer, strides, [&](const int64_t* base, const int64_t*, int64_t, int64_t) {
    for (int64_t a0 = 0; a0 < nq; a0 += kTile)
      for (int64_t b0 = 0; b0 < nl; b0 += kTile) {
        const int64_t a1 = std::min(nq, a0 + kTile), b1 = std::min(nl, b0 + kTile);
        for (int64_t b = b0; b < b1; ++b)
          for (int64_t a = a0; a < a1; ++a)  // contiguous reads along the input's fastest axis
            std::memcpy(dst + (base[1] + a * oq + b) * int64_t(ES), src + (base[0] + a + b * sl) * int64_t(ES), ES);
      }
  });
}

void k_permute_dims(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  int nd = x.ndim();
  std::vector<int64_t> axes = attrs.get_ints("axes");
  if (!attrs.has("axes")) {
    axes.resize(size_t(nd));
    for (int i = 0; i < nd; ++i) axes[size_t(i)] = nd - 1 - i;
  }
  auto xs = contiguous_strides(x.shape());
  std::vector<int64_t> st(static_cast<size_t>(nd));
  for (int i = 0; i < nd; ++i) st[size_t(i)] = xs[size_t(normalize_axis(axes[size_t(i)], nd, "permute_dims"))];
  // The output axis the input's fastest axis became, when it is not the output's fastest.
  int q = -1;
  for (int i = 0; i + 1 < nd; ++i)
    if (st[size_t(i)] == 1 && out[0].shape()[size_t(i)] > 1) q = i;
  if (q >= 0 && st[size_t(nd - 1)] != 1 && out[0].numel() > 0) {
    const auto* src = static_cast<const uint8_t*>(x.data());
    auto* dst = static_cast<uint8_t*>(out[0].data());
    if (with_element_size(size_t(x.dtype().bytes()),
                          [&](auto size) { tiled_permute<size()>(src, dst, out[0].shape(), st, q); }))
      return;
  }
  gather_strided(x, out[0], st, 0);
}

void k_broadcast_to(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  gather_strided(in[0], out[0], bcast_strides(in[0].shape(), out[0].shape()), 0);
}

void k_concat(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  Tensor& y = out[0];
  if (!attrs.has("axis")) {  // axis=None: the inputs flattened, one after the other (numpy)
    size_t at = 0;
    for (const Tensor& t : in) {
      if (!(t.dtype() == y.dtype())) throw_error("TypeError", "concat: operand dtypes differ");
      if (t.nbytes()) std::memcpy(static_cast<uint8_t*>(y.data()) + at, t.data(), t.nbytes());
      at += t.nbytes();
    }
    return;
  }
  int axis = normalize_axis(attrs.get_int("axis", 0), y.ndim(), "concat");
  size_t es = size_t(y.dtype().bytes());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= y.shape()[size_t(d)];
  for (int d = axis + 1; d < y.ndim(); ++d) inner *= y.shape()[size_t(d)];
  int64_t ylen = y.shape()[size_t(axis)], at = 0;
  for (const Tensor& t : in) {
    if (!(t.dtype() == y.dtype())) throw_error("TypeError", "concat: operand dtypes differ");
    int64_t len = t.shape()[size_t(axis)];
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<uint8_t*>(y.data()) + size_t((o * ylen + at) * inner) * es,
                  static_cast<const uint8_t*>(t.data()) + size_t(o * len * inner) * es, size_t(len * inner) * es);
    at += len;
  }
}

void k_split(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  int axis = normalize_axis(attrs.get_int("axis", 0), x.ndim(), "split");
  size_t es = size_t(x.dtype().bytes());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int d = axis + 1; d < x.ndim(); ++d) inner *= x.shape()[size_t(d)];
  int64_t xlen = x.shape()[size_t(axis)], at = 0;
  for (Tensor& t : out) {
    int64_t len = t.shape()[size_t(axis)];
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<uint8_t*>(t.data()) + size_t(o * len * inner) * es,
                  static_cast<const uint8_t*>(x.data()) + size_t((o * xlen + at) * inner) * es, size_t(len * inner) * es);
    at += len;
  }
}

// Attributes axes/begin/end/strides (set by the lowering from the call's arguments); Python
// slice semantics for the start, the output shape (computed by the VM) gives the length.
void k_strided_slice(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor& x = in[0];
  int nd = x.ndim();
  auto axes = attrs.get_ints("axes"), begin = attrs.get_ints("begin"), strides = attrs.get_ints("strides");
  auto xs = contiguous_strides(x.shape());
  std::vector<int64_t> st = xs;
  int64_t base = 0;
  for (size_t k = 0; k < axes.size(); ++k) {
    int a = normalize_axis(axes[k], nd, "strided_slice");
    int64_t s = k < strides.size() ? strides[k] : 1, dim = x.shape()[size_t(a)];
    if (s == 0) throw_error("ValueError", "strided_slice: stride must not be zero");
    int64_t b = k < begin.size() ? begin[k] : 0;
    if (b < 0) b += dim;
    b = s > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, -1, dim - 1);
    if (out[0].shape()[size_t(a)] > 0) {
      int64_t last = b + (out[0].shape()[size_t(a)] - 1) * s;
      if (b < 0 || b >= dim || last < 0 || last >= dim)
        throw_error("ValueError", "strided_slice: slice out of bounds on axis " + std::to_string(a));
    }
    base += b * xs[size_t(a)];
    st[size_t(a)] = xs[size_t(a)] * s;
  }
  gather_strided(x, out[0], st, base);
}

void k_take(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  Tensor x = in[0];
  const Tensor& idx = in[1];
  int axis;
  if (!attrs.has("axis")) {
    x = Tensor::from_buffer({x.numel()}, x.dtype(), x.buffer());
    axis = 0;
  } else {
    axis = normalize_axis(attrs.get_int("axis", 0), x.ndim(), "take");
  }
  std::string mode = attrs.get_string("mode", "fast");
  int64_t outer = 1, inner = 1, dim = x.shape()[size_t(axis)];
  for (int d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (int d = axis + 1; d < x.ndim(); ++d) inner *= x.shape()[size_t(d)];
  int64_t ni = idx.numel();
  std::vector<int64_t> ids(static_cast<size_t>(ni));
  dispatch(idx.dtype(), "take", [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_floating_point_v<I>) {
      throw_error("TypeError", "take: indices must be integers");
    } else {
      const I* p = idx.data_as<I>();
      for (int64_t i = 0; i < ni; ++i) ids[size_t(i)] = int64_t(p[i]);
    }
  });
  for (auto& i : ids) {
    if (mode == "clip") i = std::clamp<int64_t>(i, 0, dim - 1);
    else if (mode == "wrap") i = dim ? ((i % dim) + dim) % dim : 0;
    else {
      if (i < 0) i += dim;
      if (i < 0 || i >= dim) throw_error("IndexError", "take: index " + std::to_string(i) + " out of range for axis of size " + std::to_string(dim));
    }
  }
  size_t es = size_t(x.dtype().bytes());
  const uint8_t* src = static_cast<const uint8_t*>(x.data());
  uint8_t* dst = static_cast<uint8_t*>(out[0].data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < ni; ++j)
      std::memcpy(dst + size_t((o * ni + j) * inner) * es, src + size_t((o * dim + ids[size_t(j)]) * inner) * es,
                  size_t(inner) * es);
}

void fill(Tensor& t, double v) {
  dispatch(t.dtype(), "fill", [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(t.data_as<T>(), t.numel(), T(v));
  });
}
void k_ones(std::span<const Tensor>, const KernelAttrs&, std::span<Tensor> out) { fill(out[0], 1); }
void k_zeros(std::span<const Tensor>, const KernelAttrs&, std::span<Tensor> out) { fill(out[0], 0); }
// full(shape, fill_value): the 0-d fill value is the only tensor input.
void k_full(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  const Tensor& v = in.back();
  if (v.numel() != 1) throw_error("ValueError", "full: fill_value must be a scalar");
  Tensor conv = Tensor::empty({}, out[0].dtype());
  convert(v, conv);
  size_t es = size_t(out[0].dtype().bytes());
  uint8_t* d = static_cast<uint8_t*>(out[0].data());
  for (int64_t i = 0; i < out[0].numel(); ++i) std::memcpy(d + size_t(i) * es, conv.data(), es);
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.permute_dims", k_permute_dims);
PARTITA_REGISTER_KERNEL("relax.broadcast_to", k_broadcast_to);
PARTITA_REGISTER_KERNEL("relax.concat", k_concat);
PARTITA_REGISTER_KERNEL("relax.split", k_split);
PARTITA_REGISTER_KERNEL("relax.strided_slice", k_strided_slice);
PARTITA_REGISTER_KERNEL("relax.take", k_take);
PARTITA_REGISTER_KERNEL("relax.ones", k_ones);
PARTITA_REGISTER_KERNEL("relax.zeros", k_zeros);
PARTITA_REGISTER_KERNEL("relax.ones_like", k_ones);
PARTITA_REGISTER_KERNEL("relax.zeros_like", k_zeros);
PARTITA_REGISTER_KERNEL("relax.full", k_full);

}  // namespace partita::runtime::kernels
