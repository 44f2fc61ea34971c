// Reductions (sum, prod, mean, max, min, variance over axes), softmax / log_softmax and
// layer_norm as one "row" template: the kept axes number the rows, the reduced axes the elements
// of a row. Each statistic is one pass over the row; a reduction writes one element per row, the
// others an element per row element. When the innermost axis is reduced, a group of G threads
// works on a row (coalesced reads, warp-shuffle and shared-memory reduction, the row held in
// registers when it is short enough); otherwise one thread per row loops over it, and adjacent
// threads read adjacent memory.
#include <algorithm>
#include <functional>

#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {
namespace {

struct Pass {
  std::string op;    // pt_sum_op, pt_max_op, ...
  std::string init;  // the identity, of the accumulator type
  // The contribution of element x (of x's compute type) given the statistics so far.
  std::function<std::string(const std::string& x)> contribution;
  // The statistic from the reduced accumulator (a C expression of the accumulator type).
  std::function<std::string(const std::string& acc)> finish;
};

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

DataType accumulate_dtype(DataType t) {
  if (t == DataType::Float(64)) return t;
  if (t.is_float()) return DataType::Float(32);
  if (t.is_int()) return DataType::Int(64);
  return DataType::UInt(64);
}

}  // namespace

void KernelEmitter::emit_reduction() {
  const KValue& A = values_[size_t(anchor_)];
  const CallNode& call = *A.call;
  const std::string& op = A.op;
  const KValue& X = values_[size_t(A.operands.at(0))];
  const int nd = int(X.shape.size());
  const int xid = A.operands[0];

  std::vector<char> red(size_t(nd), 0);
  bool per_element = false;
  if (op == "relax.nn.softmax" || op == "relax.nn.log_softmax") {
    if (nd == 0) fail(op + " of a scalar");
    red[size_t(normalize_axis(attr_int(call, "axis", -1), nd))] = 1;
    per_element = true;
  } else if (op == "relax.nn.layer_norm") {
    for (int64_t a : attr_ints(call, "axes").value_or(std::vector<int64_t>{})) red[size_t(normalize_axis(a, nd))] = 1;
    per_element = true;
  } else if (op == "relax.nn.adaptive_avg_pool2d") {  // a global one (is_global_average_pool)
    std::vector<int> pos = layout_positions(attr_string(call, "layout", "NCHW"), "NCHW");
    red[size_t(pos[2])] = red[size_t(pos[3])] = 1;
  } else if (auto axes = attr_ints(call, "axis")) {
    for (int64_t a : *axes) red[size_t(normalize_axis(a, nd))] = 1;
  } else {
    std::fill(red.begin(), red.end(), 1);
  }
  std::vector<PrimExpr> kept_shape, red_shape;
  for (int k = 0; k < nd; ++k) (red[size_t(k)] ? red_shape : kept_shape).push_back(X.shape[size_t(k)]);
  PrimExpr rows = int_imm(1), len = int_imm(1);
  for (const auto& d : kept_shape) rows = rows * d;
  for (const auto& d : red_shape) len = len * d;
  bool trailing = true;  // the reduced axes are the last ones
  for (int k = 0; k < nd; ++k)
    if (red[size_t(k)] && k < nd - int(red_shape.size())) trailing = false;
  auto static_len = as_const_int(len);
  const bool coop = nd > 0 && red[size_t(nd - 1)] && !(static_len && *static_len < 32);

  const DataType xd = X.dtype;
  const DataType ad = accumulate_dtype(xd);
  const std::string ACC = compute_type(ad);
  const std::string L = dim(len), ROWS = dim(rows);
  auto as_acc = [&](const std::string& x) { return "(" + ACC + ")(" + x + ")"; };

  // The statistics and the anchor's value.
  std::vector<Pass> passes;
  std::vector<std::string> stats;  // names of the finished statistics, filled while emitting
  auto stat = [&](size_t k) { return stats.at(k); };
  std::string lenf = "(" + ACC + ")(" + L + ")";
  std::function<std::string()> row_result;                          // reductions
  std::function<std::string(const std::string&, const std::string&)> elem_result;  // (x, k)
  auto identity = [&](const std::string& x) { return as_acc(x); };
  auto keep = [](const std::string& acc) { return acc; };
  if (op == "relax.sum" || op == "relax.prod") {
    passes.push_back({op == "relax.sum" ? "pt_sum_op" : "pt_prod_op", op == "relax.sum" ? int_literal(ad, 0) : int_literal(ad, 1),
                      identity, keep});
    row_result = [&] { return stat(0); };
  } else if (op == "relax.max" || op == "relax.min") {
    bool mx = op == "relax.max";
    passes.push_back({mx ? "pt_max_op" : "pt_min_op", mx ? lowest_literal(ad) : highest_literal(ad), identity, keep});
    row_result = [&] { return stat(0); };
  } else if (op == "relax.mean" || op == "relax.nn.adaptive_avg_pool2d") {
    passes.push_back({"pt_sum_op", int_literal(ad, 0), identity, [&](const std::string& a) { return "(" + a + " / " + lenf + ")"; }});
    row_result = [&] { return stat(0); };
  } else if (op == "relax.variance" || op == "relax.nn.layer_norm") {
    passes.push_back({"pt_sum_op", int_literal(ad, 0), identity, [&](const std::string& a) { return "(" + a + " / " + lenf + ")"; }});
    passes.push_back({"pt_sum_op", int_literal(ad, 0),
                      [&](const std::string& x) {
                        std::string d = "(" + as_acc(x) + " - " + stat(0) + ")";
                        return d + " * " + d;
                      },
                      [&](const std::string& a) {
                        std::string var = "(" + a + " / " + lenf + ")";
                        if (op == "relax.variance") return var;
                        std::string eps = float_literal(ad, attr_float(call, "epsilon", 1e-5));
                        return "(" + float_literal(ad, 1) + " / " + math_fn(ad, "sqrt") + "(" + var + " + " + eps + "))";
                      }});
    if (op == "relax.variance") {
      row_result = [&] { return stat(1); };
    } else {
      elem_result = [&](const std::string& x, const std::string& k) {
        std::string e = "((" + as_acc(x) + " - " + stat(0) + ") * " + stat(1) + ")";
        Index pk{dims_of(values_[size_t(A.operands[1])].shape), k, {}};
        if (attr_bool(call, "scale", true)) e = "(" + e + " * " + as_acc(eval(A.operands[1], pk)) + ")";
        if (attr_bool(call, "center", true)) e = "(" + e + " + " + as_acc(eval(A.operands[2], pk)) + ")";
        return e;
      };
    }
  } else if (op == "relax.nn.softmax" || op == "relax.nn.log_softmax") {
    passes.push_back({"pt_max_op", lowest_literal(ad), identity, keep});
    passes.push_back({"pt_sum_op", int_literal(ad, 0),
                      [&](const std::string& x) { return math_fn(ad, "exp") + "(" + as_acc(x) + " - " + stat(0) + ")"; },
                      keep});
    if (op == "relax.nn.softmax")
      elem_result = [&](const std::string& x, const std::string&) {
        return "(" + math_fn(ad, "exp") + "(" + as_acc(x) + " - " + stat(0) + ") / " + stat(1) + ")";
      };
    else
      elem_result = [&](const std::string& x, const std::string&) {
        return "(" + as_acc(x) + " - " + stat(0) + " - " + math_fn(ad, "log") + "(" + stat(1) + "))";
      };
  } else {
    fail("internal: no row kernel for " + op);
  }

  // Thread shape.
  int64_t G = 1, rpb = 1, vpt = 0;
  if (coop) {
    G = static_len ? std::clamp<int64_t>(next_pow2((*static_len + 3) / 4), 32, 1024) : 256;
    rpb = std::max<int64_t>(1, 256 / G);
    if (static_len && (*static_len + G - 1) / G <= 8) vpt = (*static_len + G - 1) / G;
  }
  const std::string Gs = std::to_string(G), RPBs = std::to_string(rpb);
  const std::string XT = compute_type(xd);

  // The element (row, k) of X, and (per-element outputs) of the anchor.
  auto element = [&](const std::string& row, const std::string& k) {
    Index idx{dims_of(X.shape), "", {}};
    if (trailing) {
      idx.linear = idx_var(red_shape.empty() ? row : "(" + row + ") * " + L + " + " + k);
      return idx;
    }
    std::vector<std::string> rc = coords_of(Index{dims_of(kept_shape), row, {}});
    std::vector<std::string> kc = coords_of(Index{dims_of(red_shape), k, {}});
    size_t ri = 0, ki = 0;
    for (int d = 0; d < nd; ++d) idx.coords.push_back(red[size_t(d)] ? kc[ki++] : rc[ri++]);
    idx.linear = linear_of(idx);
    return idx;
  };

  const std::string row = w_->fresh("row");
  if (coop) {
    if (G > 32) w_->line("__shared__ " + ACC + " pt_red[" + std::to_string(rpb * (G / 32)) + "];");
    std::string row0 = w_->fresh("row");
    w_->open("for (pt_idx " + row0 + " = (pt_idx)blockIdx.x * " + RPBs + "; " + row0 + " < " + ROWS + "; " + row0 +
             " += (pt_idx)gridDim.x * " + RPBs + ")");
    w_->line("const pt_idx " + row + " = " + row0 + " + threadIdx.y;");
    w_->line("const bool active = " + row + " < " + ROWS + ";");
  } else {
    w_->open("for (pt_idx " + row + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + row + " < " + ROWS + "; " +
             row + " += (pt_idx)gridDim.x * blockDim.x)");
  }
  // Loops over the row: `body(x, k)` once per element this thread handles. With a register
  // cache, the first loop fills it and the later ones read it.
  std::string cache;
  auto for_each_element = [&](const std::function<void(const std::string&, const std::string&)>& body) {
    std::string k = w_->fresh("k");
    if (vpt > 0) {
      std::string j = w_->fresh("j");
      w_->line("#pragma unroll");
      w_->open("for (int " + j + " = 0; " + j + " < " + std::to_string(vpt) + "; ++" + j + ")");
      w_->line("const pt_idx " + k + " = (pt_idx)threadIdx.x + (pt_idx)" + j + " * " + Gs + ";");
      w_->open("if (active && " + k + " < " + L + ")");
      body(cache + "[" + j + "]", k);
      w_->close();
      w_->close();
    } else if (coop) {
      w_->open("if (active)");
      w_->open("for (pt_idx " + k + " = threadIdx.x; " + k + " < " + L + "; " + k + " += " + Gs + ")");
      body(eval(xid, element(row, k)), k);
      w_->close();
      w_->close();
    } else {
      w_->open("for (pt_idx " + k + " = 0; " + k + " < " + L + "; ++" + k + ")");
      body(eval(xid, element(row, k)), k);
      w_->close();
    }
  };
  if (vpt > 0) {
    cache = w_->fresh("xc");
    w_->line(XT + " " + cache + "[" + std::to_string(vpt) + "];");
    std::string j = w_->fresh("j"), k = w_->fresh("k");
    w_->line("#pragma unroll");
    w_->open("for (int " + j + " = 0; " + j + " < " + std::to_string(vpt) + "; ++" + j + ")");
    w_->line("const pt_idx " + k + " = (pt_idx)threadIdx.x + (pt_idx)" + j + " * " + Gs + ";");
    w_->open("if (active && " + k + " < " + L + ")");
    w_->line(cache + "[" + j + "] = " + eval(xid, element(row, k)) + ";");
    w_->close();
    w_->close();
  }
  for (size_t p = 0; p < passes.size(); ++p) {
    std::string acc = w_->fresh("acc");
    w_->line(ACC + " " + acc + " = " + passes[p].init + ";");
    for_each_element([&](const std::string& x, const std::string&) {
      w_->line(acc + " = " + passes[p].op + "()(" + acc + ", " + passes[p].contribution(x) + ");");
    });
    if (coop) w_->line(acc + " = pt_row_reduce<" + Gs + ">(" + acc + ", " + passes[p].op + "(), " +
                       (G > 32 ? "pt_red" : "(" + ACC + "*)0") + ");");
    std::string s = w_->fresh("st");
    w_->line("const " + ACC + " " + s + " = " + passes[p].finish(acc) + ";");
    stats.push_back(s);
  }
  const std::string AT = compute_type(A.dtype);
  if (!per_element) {
    w_->open(coop ? "if (active && threadIdx.x == 0)" : "if (true)");
    Index out{dims_of(A.shape), row, {}};
    set_anchor_value(out, "(" + AT + ")(" + row_result() + ")");
    store_outputs(out);
    w_->close();
  } else {
    for_each_element([&](const std::string& x, const std::string& k) {
      Index out = element(row, k);
      out.dims = dims_of(A.shape);
      set_anchor_value(out, "(" + AT + ")(" + elem_result(x, k) + ")");
      store_outputs(out);
    });
  }
  w_->close();

  if (coop) {
    PrimExpr blocks = floordiv(rows + int_imm(rpb - 1), int_imm(rpb));
    set_grid(blocks, int_imm(1), int_imm(1), uint32_t(G), uint32_t(rpb));
  } else {
    set_grid_for(rows);
  }
}

}  // namespace partita::backend::cuda
