// scatter_elements / scatter_nd in one block: its threads first copy the data to the output,
// then (after a barrier) each destination the updates name is combined by one thread — the one
// of its first update — applying every update of that destination in the host kernel's order, so
// duplicate indices give exactly the host's result ("update": the last wins; sums in order) with
// no atomics. Finding the first update of a destination compares it with the earlier ones (along
// the axis for scatter_elements, over all positions for scatter_nd). Indices count from the end
// when negative and are clamped into the axis where the host would raise.
#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {
namespace {
constexpr int kThreads = 1024;
}

void KernelEmitter::emit_scatter() {
  const KValue& A = values_[size_t(anchor_)];
  const CallNode& call = *A.call;
  const KValue& X = values_[size_t(A.operands.at(0))];
  const KValue& I = values_[size_t(A.operands.at(1))];
  const KValue& U = values_[size_t(A.operands.at(2))];
  const std::string reduction = attr_string(call, "reduction", "update");
  const std::string T = compute_type(A.dtype);
  const std::string NT = std::to_string(kThreads);
  auto combine = [&](const std::string& acc, const std::string& u) {
    if (reduction == "add") return "(" + T + ")(" + acc + " + " + u + ")";
    if (reduction == "mul") return "(" + T + ")(" + acc + " * " + u + ")";
    if (reduction == "min") return "pt_min<" + T + ">(" + acc + ", " + u + ")";
    if (reduction == "max") return "pt_max<" + T + ">(" + acc + ", " + u + ")";
    return u;
  };
  const std::vector<std::string> xd = dims_of(X.shape);
  // The copy.
  std::string e = w_->fresh("e");
  w_->open("for (pt_idx " + e + " = threadIdx.x; " + e + " < " + numel(X.shape) + "; " + e + " += " + NT + ")");
  Index at{xd, e, {}};
  set_anchor_value(at, eval(A.operands[0], at));
  store_outputs(at);
  w_->close();
  w_->line("__syncthreads();");
  // dest(q): the resolved destination (a linear offset of the data) of update position q.
  std::string t = w_->fresh("t");
  if (A.op == "relax.scatter_elements") {
    const int nd = int(X.shape.size());
    const int a = normalize_axis(attr_int(call, "axis", 0), nd);
    const std::vector<std::string> id = dims_of(I.shape);
    w_->open("for (pt_idx " + t + " = threadIdx.x; " + t + " < " + numel(I.shape) + "; " + t + " += " + NT + ")");
    std::vector<std::string> c = coords_of(Index{id, t, {}});
    // The destination of the update at coordinate `ca` along the axis (the others are c's).
    auto dest = [&](const std::string& ca) {
      std::vector<std::string> ic = c;
      ic[size_t(a)] = ca;
      std::string iv = idx_var("(pt_idx)" + eval(A.operands[1], Index{id, "", ic}));
      Index d{xd, "", {}};
      for (int k = 0; k < nd; ++k) {
        if (k == a) d.coords.push_back(idx_var("pt_resolve_index(" + iv + ", " + xd[size_t(k)] + ")"));
        else if (prove_equal(X.shape[size_t(k)], I.shape[size_t(k)])) d.coords.push_back(c[size_t(k)]);
        else d.coords.push_back(idx_var("pt_min<pt_idx>(" + c[size_t(k)] + ", " + xd[size_t(k)] + " - 1)"));
      }
      return linear_of(d);
    };
    std::string mine = dest(c[size_t(a)]);
    std::string own = w_->fresh("own"), s = w_->fresh("s");
    w_->line("bool " + own + " = true;");
    w_->open("for (pt_idx " + s + " = 0; " + s + " < " + c[size_t(a)] + " && " + own + "; ++" + s + ")");
    w_->line(own + " = " + dest(s) + " != " + mine + ";");
    w_->close();
    w_->open("if (" + own + ")");
    std::string acc = w_->fresh("acc");
    w_->line(T + " " + acc + " = " + eval(A.operands[0], Index{xd, mine, {}}) + ";");
    w_->open("for (pt_idx " + s + " = " + c[size_t(a)] + "; " + s + " < " + id[size_t(a)] + "; ++" + s + ")");
    std::string other = dest(s);
    std::vector<std::string> uc = c;
    uc[size_t(a)] = s;
    std::string u = eval(A.operands[2], Index{dims_of(U.shape), "", uc});
    w_->line("if (" + other + " == " + mine + ") " + acc + " = " + combine(acc, u) + ";");
    w_->close();
    Index out{xd, mine, {}};
    set_anchor_value(out, acc);
    store_outputs(out);
    w_->close();
    w_->close();
  } else {
    // scatter_nd: indices (..., m) name slices of the data's last axes.
    const size_t ni = I.shape.size();
    auto mc = ni ? as_const_int(I.shape.back()) : std::optional<int64_t>(0);
    if (!mc) fail("scatter_nd's indices need a known last dimension");
    const int64_t m = *mc;
    PrimExpr positions = int_imm(1), slice = int_imm(1);
    for (size_t k = 0; k + 1 < ni; ++k) positions = positions * I.shape[k];
    for (size_t k = size_t(m); k < X.shape.size(); ++k) slice = slice * X.shape[k];
    const std::string P = dim(positions), S = dim(slice);
    const std::vector<std::string> id = dims_of(I.shape);
    // The offset of position q's slice.
    auto base = [&](const std::string& q) {
      std::string off = "0";
      for (int64_t j = 0; j < m; ++j) {
        std::string at = idx_var("(" + q + ") * " + std::to_string(m) + " + " + std::to_string(j));
        std::string iv = idx_var("(pt_idx)" + eval(A.operands[1], Index{id, at, {}}));
        std::string stride = dim(slice);
        for (size_t k = size_t(j) + 1; k < size_t(m); ++k) stride = "(" + stride + ") * " + xd[k];
        off = idx_var(off + " + pt_resolve_index(" + iv + ", " + xd[size_t(j)] + ") * " + stride);
      }
      return off;
    };
    w_->open("for (pt_idx " + t + " = threadIdx.x; " + t + " < (" + P + ") * " + S + "; " + t + " += " + NT + ")");
    std::string p = idx_var(t + " / " + S), el = idx_var(t + " % " + S);
    std::string mine = base(p);
    std::string own = w_->fresh("own"), s = w_->fresh("s");
    w_->line("bool " + own + " = true;");
    w_->open("for (pt_idx " + s + " = 0; " + s + " < " + p + " && " + own + "; ++" + s + ")");
    w_->line(own + " = " + base(s) + " != " + mine + ";");
    w_->close();
    w_->open("if (" + own + ")");
    std::string dst = idx_var(mine + " + " + el);
    std::string acc = w_->fresh("acc");
    w_->line(T + " " + acc + " = " + eval(A.operands[0], Index{xd, dst, {}}) + ";");
    w_->open("for (pt_idx " + s + " = " + p + "; " + s + " < " + P + "; ++" + s + ")");
    std::string other = base(s);
    std::string u = eval(A.operands[2], Index{dims_of(U.shape), idx_var("(" + s + ") * " + S + " + " + el), {}});
    w_->line("if (" + other + " == " + mine + ") " + acc + " = " + combine(acc, u) + ";");
    w_->close();
    Index out{xd, dst, {}};
    set_anchor_value(out, acc);
    store_outputs(out);
    w_->close();
    w_->close();
  }
  set_grid(int_imm(1), int_imm(1), int_imm(1), kThreads);
}

}  // namespace partita::backend::cuda
