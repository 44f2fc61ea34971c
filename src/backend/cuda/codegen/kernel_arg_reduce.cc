// argmax / argmin along an axis (or over every element): one thread per result element walks its
// row in order and keeps the first extreme element; a NaN is the extreme (the first one wins), as
// in the host kernel and numpy. The row's elements are computed by the prologue, the int64 index
// goes through the elementwise epilogue.
#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {

void KernelEmitter::emit_arg_reduce() {
  const KValue& A = values_[size_t(anchor_)];
  const KValue& X = values_[size_t(A.operands.at(0))];
  const bool is_max = A.op == "relax.argmax";
  AxisRows r = axis_rows(X.shape, attr_opt_int(*A.call, "axis"));
  const std::string XT = compute_type(X.dtype);
  const std::string ROWS = dim(r.rows), L = dim(r.len);
  std::string row = w_->fresh("row");
  w_->open("for (pt_idx " + row + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + row + " < " + ROWS + "; " +
           row + " += (pt_idx)gridDim.x * blockDim.x)");
  std::string best = w_->fresh("best"), bv = w_->fresh("bv"), k = w_->fresh("k");
  w_->line("pt_i64 " + best + " = 0;");
  w_->line(XT + " " + bv + " = 0;");
  w_->open("for (pt_idx " + k + " = 0; " + k + " < " + L + "; ++" + k + ")");
  std::string v = eval(A.operands[0], Index{dims_of(X.shape), row_element(r, row, k), {}});
  w_->open("if (" + k + " == 0)");
  w_->line(bv + " = " + v + ";");
  w_->line("continue;");
  w_->close();
  w_->line("if (" + bv + " != " + bv + ") break;  // a NaN is the answer");
  w_->open("if (" + v + " != " + v + " || " + v + (is_max ? " > " : " < ") + bv + ")");
  w_->line(best + " = " + k + ";");
  w_->line(bv + " = " + v + ";");
  w_->close();
  w_->close();
  Index out{dims_of(A.shape), row, {}};
  set_anchor_value(out, best);
  store_outputs(out);
  w_->close();
  set_grid_for(r.rows);
}

}  // namespace partita::backend::cuda
