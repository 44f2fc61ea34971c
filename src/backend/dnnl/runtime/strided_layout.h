// Layout arithmetic for reshapes and slices inside a dnnl partition, on strided (not blocked)
// layouts: whether a reshape is a view of its source's bytes, which dense layout makes it one,
// and a dense layout in a given axis order. Pure functions of dims and strides (elements).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace partita::backend::dnnl {

using Dims = std::vector<int64_t>;

/// The axes of a tensor from outermost to innermost in memory: by decreasing stride, ties (size-1
/// axes) in axis order.
std::vector<size_t> memory_order(const Dims& dims, const Dims& strides);

/// Dense strides of `dims` whose axes lie in memory in `order` (outermost first).
Dims dense_strides(const Dims& dims, const std::vector<size_t>& order);

/// The strides of `to` that view the bytes of a tensor of `from` with `strides` as a reshape of
/// it (row-major element order), or nullopt when no strides can: a run of source axes merged
/// into one must be contiguous in memory in axis order. Size-1 axes of `to` get the smallest
/// stride of the larger axes before them (the whole extent where none is), so a plain or
/// channels-last source gives a plain or channels-last view.
std::optional<Dims> reshape_view_strides(const Dims& from, const Dims& strides, const Dims& to);

/// A dense layout of `from`, as close to `strides`' axis order as it can be, in which the reshape
/// to `to` is a view: each run of axes the reshape merges, where it is not contiguous in memory,
/// moved together in axis order to where its outermost axis lies (a channel shuffle's permuted
/// view becomes channels-last again).
Dims reshapeable_strides(const Dims& from, const Dims& strides, const Dims& to);

}  // namespace partita::backend::dnnl
