// Kernels without an anchor: one thread per output element (grid-stride), the outputs one after
// the other in one index space, each element computed inline.
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {

void KernelEmitter::emit_elementwise() {
  constexpr int kBlock = 256;
  std::vector<PrimExpr> counts;
  PrimExpr total = int_imm(0);
  for (int o : outputs_) {
    PrimExpr n = int_imm(1);
    for (const auto& d : values_[size_t(o)].shape) n = n * d;
    counts.push_back(n);
    total = total + n;
  }
  if (auto c = as_const_int(total)) max_elements_ = std::max(max_elements_, *c);
  w_->line("const pt_idx total = " + dim(total) + ";");
  std::string i = w_->fresh("e");
  w_->open("for (pt_idx " + i + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + i + " < total; " + i +
           " += (pt_idx)gridDim.x * blockDim.x)");
  PrimExpr start = int_imm(0);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const KValue& v = values_[size_t(outputs_[k])];
    PrimExpr end = start + counts[k];
    if (outputs_.size() > 1) {
      std::string cond = i + " < " + dim(end);
      if (k == 0) w_->open("if (" + cond + ")");
      else if (k + 1 < outputs_.size()) w_->reopen("} else if (" + cond + ") {");
      else w_->reopen("} else {");
    }
    std::string lin = k == 0 ? i : idx_var(i + " - " + dim(start));
    Index idx{dims_of(v.shape), lin, {}};
    std::string e = eval(outputs_[k], idx);
    w_->line("out" + std::to_string(k) + "[" + lin + "] = " + store_expr(v.dtype, e) + ";");
    start = end;
  }
  if (outputs_.size() > 1) w_->close();
  w_->close();
  PrimExpr blocks = min(floordiv(total + int_imm(kBlock - 1), int_imm(kBlock)), int_imm(1 << 16));
  set_grid(blocks, int_imm(1), int_imm(1), kBlock);
}

}  // namespace partita::backend::cuda
