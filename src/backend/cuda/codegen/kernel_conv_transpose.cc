// conv2d_transpose (NCHW data, IOHW weight, groups, strides, dilation, padding, output_padding):
// one thread per output element gathers the products that the host kernel scatters — input row
// r and kernel row p reach output row y when r * stride - pad + p * dilation = y — accumulating
// in float (double for float64), then the elementwise epilogue.
#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {

void KernelEmitter::emit_conv2d_transpose() {
  const KValue& A = values_[size_t(anchor_)];
  const CallNode& call = *A.call;
  const KValue& X = values_[size_t(A.operands.at(0))];
  const KValue& W = values_[size_t(A.operands.at(1))];
  auto pair = attr_pair(call, "strides", 1), dil = attr_pair(call, "dilation", 1);
  auto pad = attr_padding(call, "padding");
  const int64_t groups = attr_int(call, "groups", 1);
  const std::string ACC = X.dtype == DataType::Float(64) ? "double" : "float";
  const std::vector<std::string> xd = dims_of(X.shape), wd = dims_of(W.shape), od = dims_of(A.shape);
  const std::string G = std::to_string(groups);
  std::string e = w_->fresh("e");
  w_->open("for (pt_idx " + e + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + e + " < " + numel(A.shape) +
           "; " + e + " += (pt_idx)gridDim.x * blockDim.x)");
  Index out{od, e, {}};
  std::vector<std::string> oc = coords_of(out);
  const std::string ig = idx_var(xd[1] + " / " + G), og = wd[1];
  std::string g = idx_var(oc[1] + " / " + og), o = idx_var(oc[1] + " % " + og);
  std::string acc = w_->fresh("acc"), i = w_->fresh("ic"), p = w_->fresh("p"), q = w_->fresh("q");
  w_->line(ACC + " " + acc + " = 0;");
  w_->open("for (pt_idx " + i + " = 0; " + i + " < " + ig + "; ++" + i + ")");
  std::string c = idx_var(g + " * " + ig + " + " + i);
  w_->open("for (pt_idx " + p + " = 0; " + p + " < " + wd[2] + "; ++" + p + ")");
  std::string ty = idx_var(oc[2] + " + " + std::to_string(pad[0]) + " - " + p + " * " + std::to_string(dil[0]));
  w_->line("if (" + ty + " < 0 || " + ty + " % " + std::to_string(pair[0]) + " != 0) continue;");
  std::string r = idx_var(ty + " / " + std::to_string(pair[0]));
  w_->line("if (" + r + " >= " + xd[2] + ") continue;");
  w_->open("for (pt_idx " + q + " = 0; " + q + " < " + wd[3] + "; ++" + q + ")");
  std::string tx = idx_var(oc[3] + " + " + std::to_string(pad[1]) + " - " + q + " * " + std::to_string(dil[1]));
  w_->line("if (" + tx + " < 0 || " + tx + " % " + std::to_string(pair[1]) + " != 0) continue;");
  std::string s = idx_var(tx + " / " + std::to_string(pair[1]));
  w_->line("if (" + s + " >= " + xd[3] + ") continue;");
  std::string xv = eval(A.operands[0], Index{xd, "", {oc[0], c, r, s}});
  std::string wv = eval(A.operands[1], Index{wd, "", {c, o, p, q}});
  w_->line(acc + " += (" + ACC + ")" + xv + " * (" + ACC + ")" + wv + ";");
  w_->close();
  w_->close();
  w_->close();
  set_anchor_value(out, "(" + compute_type(A.dtype) + ")" + acc);
  store_outputs(out);
  w_->close();
  set_grid_per_element(A.shape);
}

}  // namespace partita::backend::cuda
