// max_pool2d / avg_pool2d / adaptive_avg_pool2d: one thread per output element looping over its
// window, in any ordering of the NCHW letters; the host kernels' rules (max starts from the
// lowest finite value, count_include_pad counts positions inside the padded input).
#include <cfloat>

#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {

bool is_global_average_pool(const KValue& v) {
  if (v.op != "relax.nn.adaptive_avg_pool2d" || !v.call || !v.dtype.is_float() || v.shape.size() != 4) return false;
  const CallNode& call = *v.call;
  const std::string layout = attr_string(call, "layout", "NCHW");
  if (attr_string(call, "out_layout", layout) != layout) return false;
  std::vector<int> pos = layout_positions(layout, "NCHW");
  auto one = [&](int axis) {
    auto d = as_const_int(v.shape[size_t(pos[size_t(axis)])]);
    return d && *d == 1;
  };
  return one(2) && one(3);
}

void KernelEmitter::emit_pool() {
  const KValue& A = values_[size_t(anchor_)];
  const CallNode& call = *A.call;
  const KValue& X = values_[size_t(A.operands.at(0))];
  const int xid = A.operands[0];
  const bool is_max = A.op == "relax.nn.max_pool2d";
  const bool adaptive = A.op == "relax.nn.adaptive_avg_pool2d";
  std::vector<int> dpos = layout_positions(attr_string(call, "layout", "NCHW"), "NCHW");
  std::vector<int> opos = layout_positions(attr_string(call, "out_layout", attr_string(call, "layout", "NCHW")), "NCHW");
  const DataType xd = X.dtype;
  const bool float_data = xd.is_float();
  const std::string ACC = float_data ? compute_type(xd) : (is_max ? compute_type(xd) : "double");
  const std::string XT = compute_type(xd);

  std::string i = w_->fresh("e");
  w_->open("for (pt_idx " + i + " = (pt_idx)blockIdx.x * blockDim.x + threadIdx.x; " + i + " < " + numel(A.shape) + "; " +
           i + " += (pt_idx)gridDim.x * blockDim.x)");
  Index out{dims_of(A.shape), i, {}};
  out.coords = coords_of(out);
  const std::string n = out.coords[size_t(opos[0])], c = out.coords[size_t(opos[1])];
  const std::string oh = out.coords[size_t(opos[2])], ow = out.coords[size_t(opos[3])];
  std::vector<std::string> xdims = dims_of(X.shape);
  const std::string H = xdims[size_t(dpos[2])], W = xdims[size_t(dpos[3])];
  auto at = [&](const std::string& ih, const std::string& iw) {
    Index in{xdims, "", std::vector<std::string>(4)};
    in.coords[size_t(dpos[0])] = n;
    in.coords[size_t(dpos[1])] = c;
    in.coords[size_t(dpos[2])] = ih;
    in.coords[size_t(dpos[3])] = iw;
    return eval(xid, in);
  };
  std::string result;
  if (adaptive) {
    const std::string OH = out.dims[size_t(opos[2])], OW = out.dims[size_t(opos[3])];
    std::string h0 = idx_var("(" + oh + " * " + H + ") / " + OH), h1 = idx_var("((" + oh + " + 1) * " + H + " + " + OH + " - 1) / " + OH);
    std::string w0 = idx_var("(" + ow + " * " + W + ") / " + OW), w1 = idx_var("((" + ow + " + 1) * " + W + " + " + OW + " - 1) / " + OW);
    std::string sum = w_->fresh("sum");
    w_->line(ACC + " " + sum + " = 0;");
    std::string ih = w_->fresh("h"), iw = w_->fresh("w");
    w_->open("for (pt_idx " + ih + " = " + h0 + "; " + ih + " < " + h1 + "; ++" + ih + ")");
    w_->open("for (pt_idx " + iw + " = " + w0 + "; " + iw + " < " + w1 + "; ++" + iw + ")");
    w_->line(sum + " += (" + ACC + ")" + at(ih, iw) + ";");
    w_->close();
    w_->close();
    result = "(" + compute_type(A.dtype) + ")(" + sum + " / (" + ACC + ")((" + h1 + " - " + h0 + ") * (" + w1 + " - " + w0 + ")))";
  } else {
    std::vector<int64_t> ps = attr_pair(call, "pool_size", 1), st = attr_pair(call, "strides", 1);
    std::vector<int64_t> dil = attr_pair(call, "dilation", 1), pad = attr_padding(call, "padding");
    bool include_pad = attr_bool(call, "count_include_pad", false);
    std::string best = w_->fresh("best"), sum = w_->fresh("sum"), count = w_->fresh("cnt"), padded = w_->fresh("pad");
    if (is_max) {
      std::string lowest = xd == DataType::Float(64) ? float_literal(xd, -DBL_MAX)
                           : float_data                ? float_literal(DataType::Float(32), -FLT_MAX)
                                                       : lowest_literal(xd);
      w_->line(XT + " " + best + " = " + lowest + ";");
    } else {
      w_->line(ACC + " " + sum + " = 0;");
      w_->line("int " + count + " = 0, " + padded + " = 0;");
    }
    std::string kh = w_->fresh("kh"), kw = w_->fresh("kw");
    w_->line("#pragma unroll");
    w_->open("for (int " + kh + " = 0; " + kh + " < " + std::to_string(ps[0]) + "; ++" + kh + ")");
    std::string ih = idx_var(oh + " * " + std::to_string(st[0]) + " - " + std::to_string(pad[0]) + " + " + kh + " * " +
                             std::to_string(dil[0]));
    w_->line("#pragma unroll");
    w_->open("for (int " + kw + " = 0; " + kw + " < " + std::to_string(ps[1]) + "; ++" + kw + ")");
    std::string iw = idx_var(ow + " * " + std::to_string(st[1]) + " - " + std::to_string(pad[1]) + " + " + kw + " * " +
                             std::to_string(dil[1]));
    if (!is_max && include_pad)
      w_->line("if (" + ih + " < " + H + " + " + std::to_string(pad[2]) + " && " + iw + " < " + W + " + " +
               std::to_string(pad[3]) + ") ++" + padded + ";");
    w_->open("if (" + ih + " >= 0 && " + ih + " < " + H + " && " + iw + " >= 0 && " + iw + " < " + W + ")");
    std::string x = at(ih, iw);
    if (is_max) {
      w_->line("if (" + x + " > " + best + ") " + best + " = " + x + ";");
    } else {
      w_->line(sum + " += (" + ACC + ")" + x + ";");
      w_->line("++" + count + ";");
    }
    w_->close();
    w_->close();
    w_->close();
    if (is_max) {
      result = best;
    } else {
      std::string div = include_pad ? padded : count;
      result = "(" + compute_type(A.dtype) + ")(" + div + " ? " + sum + " / (" + ACC + ")" + div + " : (" + ACC + ")0)";
    }
  }
  set_anchor_value(out, result);
  store_outputs(out);
  w_->close();
  set_grid_per_element(A.shape);
}

}  // namespace partita::backend::cuda
