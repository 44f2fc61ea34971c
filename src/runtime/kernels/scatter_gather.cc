// Element-wise indexing: gather_elements, gather_nd, scatter_elements, scatter_nd. Indices may
// be negative (counting from the end of their axis); out-of-range indices are errors.
#include <cstring>

#include "common.h"

namespace partita::runtime::kernels {
namespace {

std::vector<int64_t> read_indices(const Tensor& idx, const char* op) {
  std::vector<int64_t> out(static_cast<size_t>(idx.numel()));
  dispatch(idx.dtype(), op, [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_floating_point_v<I>) {
      throw_error("TypeError", std::string(op) + ": indices must be integers");
    } else {
      const I* p = idx.data_as<I>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = int64_t(p[i]);
    }
  });
  return out;
}

int64_t resolve(int64_t i, int64_t dim, const char* op) {
  if (i < -dim || i >= dim)
    throw_error("IndexError", std::string(op) + ": index " + std::to_string(i) + " is out of range for an axis of size " +
                                  std::to_string(dim));
  return i < 0 ? i + dim : i;
}

/// Offset in `shape` (row-major) of the element whose coordinates are `coord`.
int64_t offset_of(const std::vector<int64_t>& strides, const std::vector<int64_t>& coord) {
  int64_t off = 0;
  for (size_t d = 0; d < coord.size(); ++d) off += coord[d] * strides[d];
  return off;
}

/// Advances `coord` over `shape` (row-major odometer); false after the last element.
bool next(std::vector<int64_t>& coord, const std::vector<int64_t>& shape) {
  for (size_t d = coord.size(); d-- > 0;) {
    if (++coord[d] < shape[d]) return true;
    coord[d] = 0;
  }
  return false;
}

void k_gather_elements(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor &x = in[0], &idx = in[1];
  int nd = x.ndim();
  int axis = normalize_axis(attrs.get_int("axis", 0), nd, "gather_elements");
  auto ids = read_indices(idx, "gather_elements");
  auto xs = contiguous_strides(x.shape());
  size_t es = size_t(x.dtype().bytes());
  const uint8_t* src = static_cast<const uint8_t*>(x.data());
  uint8_t* dst = static_cast<uint8_t*>(out[0].data());
  if (idx.numel() == 0) return;
  std::vector<int64_t> coord(size_t(nd), 0);
  int64_t q = 0;
  do {
    std::vector<int64_t> c = coord;
    c[size_t(axis)] = resolve(ids[size_t(q)], x.shape()[size_t(axis)], "gather_elements");
    for (int d = 0; d < nd; ++d)
      if (d != axis && c[size_t(d)] >= x.shape()[size_t(d)])
        throw_error("IndexError", "gather_elements: indices are larger than the data on a non-gathered axis");
    std::memcpy(dst + size_t(q) * es, src + size_t(offset_of(xs, c)) * es, es);
    ++q;
  } while (next(coord, idx.shape()));
}

void k_gather_nd(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor &x = in[0], &idx = in[1];
  int64_t b = attrs.get_int("batch_dims", 0);
  int64_t m = idx.shape().back();
  auto ids = read_indices(idx, "gather_nd");
  auto xs = contiguous_strides(x.shape());
  int64_t slice = 1, batch_size = 1, per_batch = 1;
  for (int d = int(b + m); d < x.ndim(); ++d) slice *= x.shape()[size_t(d)];
  for (int d = 0; d < b; ++d) batch_size *= x.shape()[size_t(d)];
  for (int d = int(b); d + 1 < idx.ndim(); ++d) per_batch *= idx.shape()[size_t(d)];
  size_t es = size_t(x.dtype().bytes());
  const uint8_t* src = static_cast<const uint8_t*>(x.data());
  uint8_t* dst = static_cast<uint8_t*>(out[0].data());
  const int64_t positions = batch_size * per_batch;
  for (int64_t p = 0; p < positions; ++p) {
    int64_t off = (p / std::max<int64_t>(per_batch, 1)) * (b > 0 ? xs[size_t(b - 1)] : 0);
    for (int64_t j = 0; j < m; ++j)
      off += resolve(ids[size_t(p * m + j)], x.shape()[size_t(b + j)], "gather_nd") * xs[size_t(b + j)];
    std::memcpy(dst + size_t(p * slice) * es, src + size_t(off) * es, size_t(slice) * es);
  }
}

/// Combines `u` into `*d` by `reduction`; float16 / bfloat16 through float, rounded once.
template <class T>
void combine(T* d, T u, const std::string& reduction) {
  if constexpr (is_float16_storage_v<T>) {
    if (reduction == "update") {
      *d = u;
    } else {
      float f = d->to_float();
      combine(&f, u.to_float(), reduction);
      *d = T::from(f);
    }
  } else {
    if (reduction == "update") *d = u;
    else if (reduction == "add") *d = T(*d + u);
    else if (reduction == "mul") *d = T(*d * u);
    else if (reduction == "min") *d = std::min(*d, u);
    else if (reduction == "max") *d = std::max(*d, u);
    else throw_error("ValueError", "scatter: unknown reduction '" + reduction + "'");
  }
}

void k_scatter_elements(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor &x = in[0], &idx = in[1], &upd = in[2];
  if (idx.shape() != upd.shape()) throw_error("ValueError", "scatter_elements: indices and updates differ in shape");
  int nd = x.ndim();
  int axis = normalize_axis(attrs.get_int("axis", 0), nd, "scatter_elements");
  std::string reduction = attrs.get_string("reduction", "update");
  auto ids = read_indices(idx, "scatter_elements");
  auto xs = contiguous_strides(x.shape());
  if (x.nbytes()) std::memcpy(out[0].data(), x.data(), x.nbytes());
  if (idx.numel() == 0) return;
  dispatch_with_float16(x.dtype(), "scatter_elements", [&](auto tag) {
    using T = decltype(tag);
    T* po = out[0].data_as<T>();
    const T* pu = upd.data_as<T>();
    std::vector<int64_t> coord(size_t(nd), 0);
    int64_t q = 0;
    do {
      std::vector<int64_t> c = coord;
      c[size_t(axis)] = resolve(ids[size_t(q)], x.shape()[size_t(axis)], "scatter_elements");
      for (int d = 0; d < nd; ++d)
        if (c[size_t(d)] >= x.shape()[size_t(d)])
          throw_error("IndexError", "scatter_elements: updates are larger than the data on a non-scattered axis");
      combine(po + offset_of(xs, c), pu[q], reduction);
      ++q;
    } while (next(coord, idx.shape()));
  });
}

void k_scatter_nd(std::span<const Tensor> in, const KernelAttrs& attrs, std::span<Tensor> out) {
  const Tensor &x = in[0], &idx = in[1], &upd = in[2];
  std::string reduction = attrs.get_string("reduction", "update");
  int64_t m = idx.ndim() ? idx.shape().back() : 0;
  if (m > x.ndim()) throw_error("ValueError", "scatter_nd: indices address more dimensions than the data has");
  auto ids = read_indices(idx, "scatter_nd");
  auto xs = contiguous_strides(x.shape());
  int64_t slice = 1;
  for (int d = int(m); d < x.ndim(); ++d) slice *= x.shape()[size_t(d)];
  int64_t positions = m ? idx.numel() / m : 0;
  if (upd.numel() != positions * slice) throw_error("ValueError", "scatter_nd: updates have the wrong size");
  if (x.nbytes()) std::memcpy(out[0].data(), x.data(), x.nbytes());
  dispatch_with_float16(x.dtype(), "scatter_nd", [&](auto tag) {
    using T = decltype(tag);
    T* po = out[0].data_as<T>();
    const T* pu = upd.data_as<T>();
    for (int64_t p = 0; p < positions; ++p) {
      int64_t off = 0;
      for (int64_t j = 0; j < m; ++j)
        off += resolve(ids[size_t(p * m + j)], x.shape()[size_t(j)], "scatter_nd") * xs[size_t(j)];
      for (int64_t e = 0; e < slice; ++e) combine(po + off + e, pu[p * slice + e], reduction);
    }
  });
}

}  // namespace

PARTITA_REGISTER_KERNEL("relax.gather_elements", k_gather_elements);
PARTITA_REGISTER_KERNEL("relax.gather_nd", k_gather_nd);
PARTITA_REGISTER_KERNEL("relax.scatter_elements", k_scatter_elements);
PARTITA_REGISTER_KERNEL("relax.scatter_nd", k_scatter_nd);

}  // namespace partita::runtime::kernels
