// cumsum along an axis (or over the flattened input): one thread per row runs along it in order,
// as the host kernel does — each element converted to the result's dtype first, floats summed in
// double, integers in their own type (wrapping) — inclusive or exclusive.
#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {

void KernelEmitter::emit_cumsum() {
  const KValue& A = values_[size_t(anchor_)];
  const KValue& X = values_[size_t(A.operands.at(0))];
  const bool exclusive = attr_bool(*A.call, "exclusive", false);
  AxisRows r = axis_rows(X.shape, attr_opt_int(*A.call, "axis"));
  const std::string AT = compute_type(A.dtype);
  const std::string ACC = A.dtype.is_float() ? "double" : AT;
  std::string row = w_->fresh("row");
  w_->open("for (pt_idx " + row + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + row + " < " + dim(r.rows) +
           "; " + row + " += (pt_idx)gridDim.x * blockDim.x)");
  std::string acc = w_->fresh("acc"), k = w_->fresh("k");
  w_->line(ACC + " " + acc + " = 0;");
  w_->open("for (pt_idx " + k + " = 0; " + k + " < " + dim(r.len) + "; ++" + k + ")");
  std::string at = row_element(r, row, k);
  std::string x = convert_expr(X.dtype, A.dtype, eval(A.operands[0], Index{dims_of(X.shape), at, {}}));
  std::string add = acc + " = (" + ACC + ")(" + acc + " + (" + ACC + ")(" + x + "));";
  Index out{dims_of(A.shape), at, {}};
  if (exclusive) {
    set_anchor_value(out, "(" + AT + ")" + acc);
    store_outputs(out);
    w_->line(add);
  } else {
    w_->line(add);
    set_anchor_value(out, "(" + AT + ")" + acc);
    store_outputs(out);
  }
  w_->close();
  w_->close();
  set_grid_for(r.rows);
}

}  // namespace partita::backend::cuda
