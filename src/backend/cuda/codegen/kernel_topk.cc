// topk along an axis: one thread per row selects the k best elements one after the other, each
// the best of those after the previous one in the host kernel's order (larger first, or smaller
// first when not `largest`; equal values by lower index), so the results are sorted and ties
// resolved exactly as on the host, without scratch memory (k passes over the row).
#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {

void KernelEmitter::emit_topk() {
  const KValue& A = values_[size_t(anchor_)];
  const CallNode& call = *A.call;
  const KValue& X = values_[size_t(A.operands.at(0))];
  const int64_t K = attr_int(call, "k", 1);
  const bool largest = attr_bool(call, "largest", true);
  const std::string ret = attr_string(call, "ret_type", "both");
  AxisRows r = axis_rows(X.shape, attr_int(call, "axis", -1));
  const std::string XT = compute_type(X.dtype);
  const char* better = largest ? " > " : " < ";
  // Which output is the values and which the indices.
  std::vector<bool> is_values;
  for (int o : outputs_) {
    const KValue& v = values_[size_t(o)];
    if (v.kind == KValue::Field && v.call == &call) is_values.push_back(v.field == 0);
    else if (o == anchor_) is_values.push_back(ret == "values");
    else fail("internal: an output of topk's kernel is not a result of topk");
  }
  std::string row = w_->fresh("row");
  w_->open("for (pt_idx " + row + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + row + " < " + dim(r.rows) +
           "; " + row + " += (pt_idx)gridDim.x * blockDim.x)");
  std::string last = w_->fresh("last"), lv = w_->fresh("lv"), j = w_->fresh("j");
  w_->line("pt_i64 " + last + " = -1;");
  w_->line(XT + " " + lv + " = 0;");
  w_->open("for (pt_idx " + j + " = 0; " + j + " < " + std::to_string(K) + "; ++" + j + ")");
  std::string best = w_->fresh("best"), bv = w_->fresh("bv"), q = w_->fresh("q");
  w_->line("pt_i64 " + best + " = -1;");
  w_->line(XT + " " + bv + " = 0;");
  w_->open("for (pt_idx " + q + " = 0; " + q + " < " + dim(r.len) + "; ++" + q + ")");
  std::string u = eval(A.operands[0], Index{dims_of(X.shape), row_element(r, row, q), {}});
  // Only elements after the previous pick, in the order (value, then index).
  w_->line("if (" + last + " >= 0 && !(" + lv + " != " + u + " ? " + lv + better + u + " : " + last + " < " + q +
           ")) continue;");
  w_->open("if (" + best + " < 0 || (" + u + " != " + bv + " ? " + u + better + bv + " : " + q + " < " + best + "))");
  w_->line(best + " = " + q + ";");
  w_->line(bv + " = " + u + ";");
  w_->close();
  w_->close();
  w_->line(last + " = " + best + ";");
  w_->line(lv + " = " + bv + ";");
  std::vector<PrimExpr> out_shape = X.shape;
  out_shape[size_t(*r.axis)] = int_imm(K);
  AxisRows ro{r.rows, int_imm(K), out_shape, r.axis};
  std::string at = row_element(ro, row, j);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    DataType dt = values_[size_t(outputs_[k])].dtype;
    std::string e = is_values[k] ? bv : "(" + compute_type(dt) + ")" + best;
    w_->line("out" + std::to_string(k) + "[" + at + "] = " + store_expr(dt, e) + ";");
  }
  w_->close();
  w_->close();
  set_grid_for(r.rows);
}

}  // namespace partita::backend::cuda
