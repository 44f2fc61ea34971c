// image.resize2d at an output element, inline (an injective op): each spatial axis gets its
// input taps and weights from pt_resize_axis (prelude.h: the host kernel's coordinate
// transformations, rounding and cubic weights), then the width taps are blended per height tap
// and the rows by the height weights, in the host kernel's order and precision (float unless the
// input or output is float64). Nearest reads the one input element its indices name.
#include "call_attrs.h"
#include "cuda_types.h"
#include "kernel_emitter.h"

namespace partita::backend::cuda {
namespace {

int mode_code(const std::string& m) {
  if (m == "half_pixel") return 0;
  if (m == "pytorch_half_pixel") return 1;
  if (m == "align_corners") return 2;
  if (m == "asymmetric") return 3;
  return 4;  // tf_half_pixel_for_nn (the op refuses others)
}

int rounding_code(const std::string& r) {
  if (r == "floor") return 0;
  if (r == "ceil") return 1;
  if (r == "round_prefer_ceil") return 2;
  if (r == "round") return 4;
  return 3;  // round_prefer_floor and ""
}

}  // namespace

std::string KernelEmitter::compute_resize2d(int v, const Index& idx) {
  const KValue& kv = values_[size_t(v)];
  const CallNode& call = *kv.call;
  const KValue& x = values_[size_t(kv.operands.at(0))];
  const bool nchw = attr_string(call, "layout", "NCHW") == "NCHW";
  const std::string method = attr_string(call, "method", "linear");
  const int meth = method == "nearest_neighbor" ? 0 : method == "linear" ? 1 : 2;
  const int taps = meth == 1 ? 2 : 4;  // linear, cubic (nearest reads one element)
  const int mode = mode_code(attr_string(call, "coordinate_transformation_mode", "half_pixel"));
  const int rounding = rounding_code(attr_string(call, "rounding_method", "round"));
  const std::string args = std::to_string(meth) + ", " + std::to_string(mode) + ", " + std::to_string(rounding) + ", " +
                           float_literal(DataType::Float(64), attr_float(call, "cubic_alpha", -0.5)) + ", " +
                           (attr_int(call, "cubic_exclude", 0) != 0 ? "true" : "false");
  const size_t hd = nchw ? 2 : 1, wd = hd + 1;
  const bool wide = x.dtype == DataType::Float(64) || kv.dtype == DataType::Float(64);
  const std::string ACC = wide ? "double" : "float";
  std::vector<std::string> oc = coords_of(idx);
  std::vector<std::string> xd = dims_of(x.shape), od = dims_of(kv.shape);
  auto axis = [&](size_t d) {
    std::string i = w_->fresh("ti"), wt = w_->fresh("tw");
    w_->line("pt_i64 " + i + "[4]; double " + wt + "[4];");
    w_->line("pt_resize_axis(" + args + ", " + oc[d] + ", " + xd[d] + ", " + od[d] + ", " + i + ", " + wt + ");");
    return std::pair{i, wt};
  };
  if (meth == 0) {
    // Nearest: one input element, of weight 1. With asymmetric coordinates and floor rounding at
    // an integer upscale (PyTorch's nearest upsampling) its index is the output index over the
    // factor, exactly what pt_resize_axis's double arithmetic gives, without it (a convolution
    // reading the resize evaluates it at every tap).
    auto index = [&](size_t d) {
      auto in = as_const_int(x.shape[d]), out = as_const_int(kv.shape[d]);
      if (mode == mode_code("asymmetric") && rounding == rounding_code("floor") && in && out && *out % *in == 0)
        return idx_var(oc[d] + " / " + std::to_string(*out / *in));
      return idx_var("(pt_idx)" + axis(d).first + "[0]");
    };
    Index in{xd, "", oc};
    in.coords[hd] = index(hd);
    in.coords[wd] = index(wd);
    return "(" + compute_type(kv.dtype) + ")(" + ACC + ")" + eval(kv.operands[0], in);
  }
  auto [hi, hw] = axis(hd);
  auto [wi, ww] = axis(wd);
  std::string r = w_->fresh("v");
  w_->line(ACC + " " + r + ";");
  for (int a = 0; a < taps; ++a) {
    std::string row = w_->fresh("row");
    w_->line(ACC + " " + row + " = 0;");
    for (int q = 0; q < taps; ++q) {
      Index in{xd, "", oc};
      in.coords[hd] = idx_var("(pt_idx)" + hi + "[" + std::to_string(a) + "]");
      in.coords[wd] = idx_var("(pt_idx)" + wi + "[" + std::to_string(q) + "]");
      w_->line(row + " = " + row + " + (" + ACC + ")" + ww + "[" + std::to_string(q) + "] * (" + ACC + ")" +
               eval(kv.operands[0], in) + ";");
    }
    std::string term = "(" + ACC + ")" + hw + "[" + std::to_string(a) + "] * " + row;
    w_->line(r + " = " + (a == 0 ? term : r + " + " + term) + ";");
  }
  return "(" + compute_type(kv.dtype) + ")" + r;
}

}  // namespace partita::backend::cuda
