#include "strided_layout.h"

#include <algorithm>
#include <numeric>

namespace partita::backend::dnnl {

namespace {

// The axes of size > 1 of a reshape's source and result, matched into runs of equal element
// count (in row-major order every such run of `from` becomes the run of `to`).
struct Run {
  std::vector<size_t> from, to;
};

std::vector<Run> reshape_runs(const Dims& from, const Dims& to) {
  std::vector<size_t> fa, ta;
  for (size_t k = 0; k < from.size(); ++k)
    if (from[k] != 1) fa.push_back(k);
  for (size_t k = 0; k < to.size(); ++k)
    if (to[k] != 1) ta.push_back(k);
  std::vector<Run> runs;
  size_t i = 0, j = 0;
  while (i < fa.size() && j < ta.size()) {
    Run r{{fa[i]}, {ta[j]}};
    int64_t pf = from[fa[i]], pt = to[ta[j]];
    while (pf != pt) {
      if (pf < pt) {
        if (++i == fa.size()) return {};
        r.from.push_back(fa[i]), pf *= from[fa[i]];
      } else {
        if (++j == ta.size()) return {};
        r.to.push_back(ta[j]), pt *= to[ta[j]];
      }
    }
    runs.push_back(std::move(r));
    ++i, ++j;
  }
  if (i != fa.size() || j != ta.size()) return {};  // element counts differ
  return runs;
}

bool contiguous(const Run& r, const Dims& from, const Dims& strides) {
  for (size_t k = 0; k + 1 < r.from.size(); ++k)
    if (strides[r.from[k]] != strides[r.from[k + 1]] * from[r.from[k + 1]]) return false;
  return true;
}

}  // namespace

std::vector<size_t> memory_order(const Dims& dims, const Dims& strides) {
  std::vector<size_t> order(dims.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] > strides[b]; });
  return order;
}

Dims dense_strides(const Dims& dims, const std::vector<size_t>& order) {
  Dims strides(dims.size(), 1);
  int64_t s = 1;
  for (size_t k = order.size(); k-- > 0;) {
    strides[order[k]] = s;
    s *= std::max<int64_t>(dims[order[k]], 1);
  }
  return strides;
}

std::optional<Dims> reshape_view_strides(const Dims& from, const Dims& strides, const Dims& to) {
  auto numel = [](const Dims& d) { return std::accumulate(d.begin(), d.end(), int64_t(1), std::multiplies<>()); };
  if (numel(from) != numel(to)) return std::nullopt;
  std::vector<Run> runs = reshape_runs(from, to);
  Dims out(to.size(), 0);
  for (const Run& r : runs) {
    if (!contiguous(r, from, strides)) return std::nullopt;
    int64_t s = strides[r.from.back()];  // the run's innermost stride
    for (size_t k = r.to.size(); k-- > 0;) {
      out[r.to[k]] = s;
      s *= to[r.to[k]];
    }
  }
  int64_t extent = 1;
  for (size_t k = 0; k < from.size(); ++k)
    if (from[k] != 1) extent = std::max(extent, strides[k] * from[k]);
  for (size_t k = 0; k < to.size(); ++k) {
    if (to[k] != 1) continue;
    int64_t s = extent;
    for (size_t m = 0; m < k; ++m)
      if (to[m] != 1) s = std::min(s, out[m]);
    out[k] = s;
  }
  return out;
}

Dims reshapeable_strides(const Dims& from, const Dims& strides, const Dims& to) {
  std::vector<size_t> order = memory_order(from, strides);
  for (const Run& r : reshape_runs(from, to)) {
    if (contiguous(r, from, strides)) continue;
    auto first = std::find_if(order.begin(), order.end(),
                              [&](size_t a) { return std::find(r.from.begin(), r.from.end(), a) != r.from.end(); });
    size_t at = size_t(first - order.begin());
    order.erase(std::remove_if(order.begin(), order.end(),
                               [&](size_t a) { return std::find(r.from.begin(), r.from.end(), a) != r.from.end(); }),
                order.end());
    order.insert(order.begin() + std::ptrdiff_t(at), r.from.begin(), r.from.end());
  }
  return dense_strides(from, order);
}

}  // namespace partita::backend::dnnl
