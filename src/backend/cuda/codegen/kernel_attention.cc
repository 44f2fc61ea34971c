// nn.attention / nn.attention_bias, the plain fallback (BYOC backends take the fast paths): one
// thread per output element (b, i, n, h) computes softmax(scale · q·kᵀ + bias, causally masked)
// · v for its row in three passes over the keys (the maximum, the sum of exponentials, the
// weighted values), as the host kernel does, in TVM's layouts: query (B, Sq, N, H), key
// (B, Skv, Nkv, H), value (B, Skv, Nkv, Hv), bias broadcast to (B, N, Sq, Skv), result
// (B, Sq, N, Hv); query heads share key heads in groups of N / Nkv.
#include <cmath>

#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {

void KernelEmitter::emit_attention() {
  const KValue& A = values_[size_t(anchor_)];
  const CallNode& call = *A.call;
  const KValue& Q = values_[size_t(A.operands.at(0))];
  const KValue& K = values_[size_t(A.operands.at(1))];
  const KValue& V = values_[size_t(A.operands.at(2))];
  const bool with_bias = A.operands.size() == 4;
  const std::vector<std::string> qd = dims_of(Q.shape), kd = dims_of(K.shape), vd = dims_of(V.shape);
  const std::string ACC = Q.dtype == DataType::Float(64) ? "double" : "float";
  const DataType acc_dt = Q.dtype == DataType::Float(64) ? DataType::Float(64) : DataType::Float(32);
  const AttrValue* sv = find_attr(call, "scale");
  const double* scale_attr = sv ? std::get_if<double>(sv) : nullptr;
  const AttrValue* cv = find_attr(call, "causal_mask");
  const std::string* causal = cv ? std::get_if<std::string>(cv) : nullptr;
  std::string e = w_->fresh("e");
  w_->open("for (pt_idx " + e + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + e + " < " + numel(A.shape) +
           "; " + e + " += (pt_idx)gridDim.x * blockDim.x)");
  Index out{dims_of(A.shape), e, {}};
  std::vector<std::string> oc = coords_of(out);
  const std::string &b = oc[0], &i = oc[1], &n = oc[2], &h = oc[3];
  const std::string kvn = idx_var(n + " / (" + qd[2] + " / " + kd[2] + ")");
  const std::string scale = scale_attr ? float_literal(acc_dt, *scale_attr)
                                       : "(" + ACC + ")(1.0 / sqrt((double)" + qd[3] + "))";
  // Keys visible from query i: all, or j <= i + offset (TopLeft: 0, BottomRight: |Sq - Skv|).
  std::string visible = kd[1];
  if (causal) {
    std::string offset = *causal == "BottomRight" ? "(" + qd[1] + " > " + kd[1] + " ? " + qd[1] + " - " + kd[1] +
                                                        " : " + kd[1] + " - " + qd[1] + ")"
                                                  : "0";
    visible = idx_var("pt_min<pt_idx>(" + kd[1] + ", " + i + " + " + offset + " + 1)");
  }
  // The score of key j (statements into the current scope).
  auto score = [&](const std::string& j) {
    std::string s = w_->fresh("s"), c = w_->fresh("c");
    w_->line(ACC + " " + s + " = 0;");
    w_->open("for (pt_idx " + c + " = 0; " + c + " < " + qd[3] + "; ++" + c + ")");
    std::string qv = eval(A.operands[0], Index{qd, "", {b, i, n, c}});
    std::string kv = eval(A.operands[1], Index{kd, "", {b, j, kvn, c}});
    w_->line(s + " += (" + ACC + ")" + qv + " * (" + ACC + ")" + kv + ";");
    w_->close();
    w_->line(s + " *= " + scale + ";");
    if (with_bias) {
      const KValue& B = values_[size_t(A.operands[3])];
      std::vector<std::string> bd = dims_of(B.shape);
      std::vector<std::string> want = {b, n, i, j};
      Index bi{bd, "", {}};
      for (size_t d = 0; d < 4; ++d) bi.coords.push_back(bd[d] == "1" ? "0" : want[d]);
      w_->line(s + " += (" + ACC + ")" + eval(A.operands[3], bi) + ";");
    }
    return s;
  };
  std::string m = w_->fresh("mx"), sum = w_->fresh("sum"), acc = w_->fresh("acc"), j = w_->fresh("j");
  w_->line(ACC + " " + m + " = " + lowest_literal(acc_dt) + ", " + sum + " = 0, " + acc + " = 0;");
  w_->open("for (pt_idx " + j + " = 0; " + j + " < " + visible + "; ++" + j + ")");
  std::string s1 = score(j);
  w_->line(m + " = " + s1 + " > " + m + " ? " + s1 + " : " + m + ";");
  w_->close();
  w_->open("for (pt_idx " + j + " = 0; " + j + " < " + visible + "; ++" + j + ")");
  std::string s2 = score(j);
  std::string p = w_->fresh("p");
  w_->line("const " + ACC + " " + p + " = " + math_fn(acc_dt, "exp") + "(" + s2 + " - " + m + ");");
  w_->line(sum + " += " + p + ";");
  std::string vv = eval(A.operands[2], Index{vd, "", {b, j, kvn, h}});
  w_->line(acc + " += " + p + " * (" + ACC + ")" + vv + ";");
  w_->close();
  set_anchor_value(out, "(" + compute_type(A.dtype) + ")(" + acc + " / " + sum + ")");
  store_outputs(out);
  w_->close();
  set_grid_per_element(A.shape);
}

}  // namespace partita::backend::cuda
