// One small model per operator (and per interesting attribute / shape), written once and used by
// the CPU test (every case's kernel compiles with NVRTC for every dtype it lists) and the GPU
// test (every case against the host kernels, float16 / bfloat16 against float32 on the same
// values). Shapes are odd on purpose (not multiples of tiles, warps or vector widths); cases
// with "n" or "m" in their shapes are symbolic.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cudagen_util.h"

namespace partita::cudagen_test {

struct OpCase {
  std::string name;
  std::string params;  // "x: R.Tensor((3, 5), dtype=\"{dt}\")", {dt} replaced by the dtype
  std::string body;    // bindings, one per line, the last one binding gv
  std::vector<std::string> dtypes;
  std::map<std::string, int64_t> sym_values = {};  // values of symbolic dims for the run
  std::map<std::string, ValueRange> ranges = {};   // per parameter (default: [-2, 2])
  double tolerance = 1;                            // multiplies the dtype's tolerance
  std::string ref_body = "";  // the reference's body when the host kernels need another form
};

inline const std::vector<std::string> kFloats = {"float32", "float16", "bfloat16"};
inline const std::vector<std::string> kFloatsF64 = {"float32", "float16", "bfloat16", "float64"};
inline const std::vector<std::string> kNumeric = {"float32", "float16", "bfloat16", "int32", "int8", "int64"};
inline const std::vector<std::string> kAll = {"float32", "float16", "bfloat16", "float64", "int32", "int8",
                                              "int64", "uint8", "bool"};
inline const std::vector<std::string> kAllNumbers = {"float32", "float16", "bfloat16", "float64", "int32", "int8",
                                                     "int64", "uint8"};

/// The module of `c` at dtype `dt` (with `reference`, the body the host computes it with).
inline std::string case_text(const OpCase& c, const std::string& dt, bool reference = false) {
  const std::string& body = reference && !c.ref_body.empty() ? c.ref_body : c.body;
  std::string text = "@I.ir_module\nclass Module:\n    @R.function\n    def main(" + c.params + "):\n";
  text += "        with R.dataflow():\n";
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    if (end > start) text += "            " + body.substr(start, end - start) + "\n";
    start = end + 1;
  }
  text += "            R.output(gv)\n        return gv\n";
  return replace_all(text, "{dt}", dt);
}

#define T_(shape) "R.Tensor(" shape ", dtype=\"{dt}\")"

inline const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = {
      // ---- binary arithmetic, broadcasting ----
      {"add_broadcast", "x: " T_("(7, 1, 13)") ", y: " T_("(5, 1)"), "gv = R.add(x, y)", kAllNumbers},
      {"subtract_multiply", "x: " T_("(4, 9)") ", y: " T_("(9,)"), "lv = R.subtract(x, y)\ngv = R.multiply(lv, x)", kNumeric},
      {"divide", "x: " T_("(6, 11)") ", p: " T_("(6, 1)"), "gv = R.divide(x, p)",
       {"float32", "float16", "bfloat16", "float64", "int32", "int64"}, {}, {{"p", {1, 4}}, {"x", {-9, 9}}}},
      {"floor_divide", "x: " T_("(37,)") ", p: " T_("(37,)"), "gv = R.floor_divide(x, p)",
       {"float32", "float64", "int32", "int8"}, {}, {{"p", {1, 5}}, {"x", {-20, 20, true}}}},
      {"power", "p: " T_("(5, 7)") ", y: " T_("(5, 7)"), "gv = R.power(p, y)", kFloatsF64, {}, {{"p", {0.5, 2}}}},
      {"maximum_minimum", "x: " T_("(3, 1, 5)") ", y: " T_("(4, 5)"), "lv = R.maximum(x, y)\ngv = R.minimum(lv, y)", kAll},
      {"scalar_constant", "x: " T_("(6, 5)"), "lv = R.add(x, R.const(1.5, \"{dt}\"))\ngv = R.multiply(lv, R.const(-2, \"{dt}\"))",
       {"float32", "float16", "int32"}},
      // ---- comparisons and where ----
      {"compare_where", "x: " T_("(8, 3)") ", y: " T_("(3,)"), "c = R.less(x, y)\ngv = R.where(c, x, y)", kNumeric},
      {"compare_all", "x: " T_("(5, 6)") ", y: " T_("(5, 6)"),
       "a = R.equal(x, y)\nb = R.not_equal(x, y)\nc = R.greater(x, y)\nd = R.less_equal(x, y)\ne = R.greater_equal(x, y)\n"
       "f = R.where(a, x, y)\ng = R.where(b, f, x)\nh = R.where(c, g, y)\ni = R.where(d, h, x)\ngv = R.where(e, i, y)",
       {"float32", "int32", "int8"}, {}, {{"x", {-3, 3, true}}, {"y", {-3, 3, true}}}},
      // ---- unary ----
      {"exp_tanh_sigmoid", "x: " T_("(129,)"), "a = R.exp(x)\nb = R.tanh(a)\ngv = R.sigmoid(b)", kFloatsF64},
      {"log_sqrt_rsqrt", "p: " T_("(3, 43)"), "a = R.log(p)\nb = R.sqrt(p)\nc = R.rsqrt(p)\nd = R.add(a, b)\ngv = R.add(d, c)",
       kFloatsF64, {}, {{"p", {0.1, 9}}}},
      {"erf_gelu", "x: " T_("(2, 3, 17)"), "a = R.erf(x)\nb = R.nn.gelu(x)\nc = R.nn.gelu_tanh(x)\nd = R.nn.silu(x)\n"
       "e = R.add(a, b)\nf = R.add(c, d)\ngv = R.add(e, f)", kFloatsF64},
      {"relu_negative_abs", "x: " T_("(65,)"), "a = R.nn.relu(x)\nb = R.negative(x)\nc = R.abs(b)\nd = R.add(a, b)\ngv = R.add(d, c)",
       {"float32", "float16", "bfloat16", "int32", "int8", "int64"}},
      {"clip", "x: " T_("(4, 25)"), "gv = R.clip(x, R.prim_value(-1), R.prim_value(1))", {"float32", "float16", "int32", "int8"},
       {}, {{"x", {-3, 3}}}},
      // ---- casts ----
      {"astype_float16_roundtrip", "x: R.Tensor((6, 7), dtype=\"float32\")",
       "a = R.astype(x, dtype=\"float16\")\nb = R.astype(a, dtype=\"bfloat16\")\ngv = R.astype(b, dtype=\"float32\")", {"float32"}},
      {"astype_int", "x: R.Tensor((33,), dtype=\"float32\")",
       "a = R.astype(x, dtype=\"int32\")\nb = R.astype(a, dtype=\"int8\")\nc = R.astype(b, dtype=\"float64\")\n"
       "gv = R.astype(c, dtype=\"float32\")", {"float32"}, {}, {{"x", {-100, 100}}}},
      {"astype_bool", "x: " T_("(3, 7)"), "a = R.astype(x, dtype=\"bool\")\ngv = R.astype(a, dtype=\"{dt}\")",
       {"float32", "int32", "uint8"}, {}, {{"x", {-1.5, 1.5, true}}}},
      // ---- creation ----
      {"like_and_full", "x: " T_("(5, 3)") ", v: " T_("()"),
       "a = R.zeros_like(x)\nb = R.ones_like(x)\nc = R.add(a, b)\nd = R.full(R.shape([5, 3]), v, dtype=\"{dt}\")\n"
       "gv = R.add(c, d)", {"float32", "float16", "int32", "int64"}},
      {"zeros_ones", "x: " T_("(2, 9)"), "a = R.zeros(R.shape([2, 9]), dtype=\"{dt}\")\nb = R.ones(R.shape([2, 9]), dtype=\"{dt}\")\n"
       "c = R.add(a, b)\ngv = R.add(c, x)", {"float32", "int32"}},
      // ---- data movement ----
      {"permute_dims", "x: " T_("(3, 5, 7)"), "a = R.permute_dims(x, axes=[2, 0, 1])\ngv = R.exp(a)", kFloats},
      {"permute_reverse_int", "x: " T_("(3, 5, 7)"), "gv = R.permute_dims(x)", {"int32", "int8", "int64", "uint8", "bool"}},
      {"reshape_add", "x: " T_("(6, 10)") ", y: " T_("(20,)"), "a = R.reshape(x, R.shape([3, 20]))\ngv = R.add(a, y)", kNumeric},
      {"expand_squeeze_flatten", "x: " T_("(4, 1, 6)"),
       "a = R.squeeze(x, axis=[1])\nb = R.expand_dims(a, axis=[0])\nc = R.multiply(b, b)\ngv = R.flatten(c)", kNumeric},
      {"broadcast_to", "x: " T_("(3, 1)"), "a = R.broadcast_to(x, R.shape([2, 3, 5]))\ngv = R.add(a, a)", kNumeric},
      {"concat_axis1", "x: " T_("(3, 2, 5)") ", y: " T_("(3, 7, 5)") ", z: " T_("(3, 1, 5)"),
       "a = R.concat((x, y, z), axis=1)\ngv = R.negative(a)", kNumeric},
      {"concat_flat", "x: " T_("(2, 3)") ", y: " T_("(3, 2)"), "gv = R.concat((x, y), axis=None)", {"float32", "int8", "bool"}},
      {"split_sections", "x: " T_("(4, 9)"), "s = R.split(x, indices_or_sections=3, axis=1)\na = s[0]\nb = s[2]\n"
       "gv = R.add(a, b)", kNumeric},
      {"split_indices", "x: " T_("(10, 3)"), "s = R.split(x, indices_or_sections=[2, 7], axis=0)\na = s[0]\nb = s[1]\nc = s[2]\n"
       "d = R.sum(b, axis=[0], keepdims=True)\ne = R.add(a, d)\ngv = R.concat((e, c), axis=0)", kFloats},
      {"strided_slice", "x: " T_("(9, 11)"), "a = R.strided_slice(x, (0, 1), (-7, 1), (8, 10), (2, 3))\ngv = R.exp(a)", kFloats},
      {"strided_slice_reverse", "x: " T_("(13,)"), "gv = R.strided_slice(x, (0,), (-2,), (1,), (-1,))", {"float32", "int32", "bool"}},
      {"take_axis0", "x: " T_("(11, 6)") ", idx: R.Tensor((2, 4), dtype=\"int64\")", "gv = R.take(x, idx, axis=0)", kAll,
       {}, {{"idx", {0, 11}}}},
      {"take_axis1_modes", "x: " T_("(3, 7, 2)") ", idx: R.Tensor((5,), dtype=\"int32\")",
       "a = R.take(x, idx, axis=1, mode=\"clip\")\nb = R.take(x, idx, axis=1, mode=\"wrap\")\ngv = R.add(a, b)",
       {"float32", "int32"}, {}, {{"idx", {-9, 16}}}},
      {"take_flat", "x: " T_("(17,)") ", idx: R.Tensor((3, 2), dtype=\"int32\")", "gv = R.take(x, idx)", {"float32", "float16"},
       {}, {{"idx", {-17, 17}}}},
      {"pad_constant", "x: " T_("(2, 3, 5)"), "gv = R.nn.pad(x, pad_width=[0, 0, 1, 2, 3, 0], pad_value=0.5)",
       {"float32", "float16", "int32"}},
      {"pad_edge_reflect", "x: " T_("(4, 5)"),
       "a = R.nn.pad(x, pad_width=[2, 1, 3, 3], pad_mode=\"edge\")\nb = R.nn.pad(x, pad_width=[2, 1, 3, 3], pad_mode=\"reflect\")\n"
       "gv = R.add(a, b)", {"float32", "int32"}},
      // Reflections wider than the dimension (pt_reflect's modulo) on both sides, of a value
      // computed in the same kernel.
      {"pad_reflect_wide", "x: " T_("(3, 4)"),
       "a = R.nn.relu(x)\ngv = R.nn.pad(a, pad_width=[5, 7, 9, 10], pad_mode=\"reflect\")", {"float32", "float16"}},
      // ---- reductions ----
      {"sum_inner_keepdims", "x: " T_("(5, 7, 301)"), "gv = R.sum(x, axis=[2], keepdims=True)", kNumeric, {}, {}, 4},
      {"sum_all", "x: " T_("(9, 13)"), "gv = R.sum(x)", {"float32", "float64", "int32", "int64"}, {}, {}, 4},
      {"sum_outer", "x: " T_("(40, 9)"), "gv = R.sum(x, axis=[0])", kNumeric, {}, {}, 4},
      {"sum_middle", "x: " T_("(3, 50, 4)"), "gv = R.sum(x, axis=[1], keepdims=False)", {"float32", "int32"}, {}, {}, 4},
      {"mean_variance", "x: " T_("(6, 77)"), "a = R.mean(x, axis=[-1], keepdims=True)\nb = R.variance(x, axis=[1], keepdims=True)\n"
       "gv = R.add(a, b)", kFloatsF64, {}, {}, 4},
      {"mean_two_axes", "x: " T_("(4, 5, 6)"), "gv = R.mean(x, axis=[0, 2])", kFloats, {}, {}, 4},
      {"max_min", "x: " T_("(7, 45)"), "a = R.max(x, axis=[1])\nb = R.min(x, axis=[0])\nc = R.sum(a)\nd = R.sum(b)\n"
       "gv = R.add(c, d)", {"float32", "float16", "int32", "int8"}, {}, {}, 4},
      {"max_short_rows", "x: " T_("(33, 5)"), "gv = R.max(x, axis=[1], keepdims=True)", {"float32", "int64", "uint8"}},
      {"rms_norm_decomposed", "x: " T_("(3, 96)") ", w: " T_("(96,)") ", eps: " T_("()"),
       "a = R.multiply(x, x)\nb = R.mean(a, axis=[-1], keepdims=True)\nc = R.add(b, eps)\nd = R.rsqrt(c)\n"
       "e = R.multiply(x, d)\ngv = R.multiply(e, w)", kFloats, {}, {{"eps", {1e-3, 1e-3}}}, 4},
      {"softmax_last", "x: " T_("(5, 77)"), "gv = R.nn.softmax(x, axis=-1)", kFloatsF64, {}, {{"x", {-8, 8}}}},
      {"softmax_long_row", "x: " T_("(3, 4099)"), "gv = R.nn.softmax(x, axis=1)", kFloats, {}, {{"x", {-8, 8}}}},
      {"softmax_middle", "x: " T_("(2, 33, 3)"), "gv = R.nn.softmax(x, axis=1)", kFloats, {}, {{"x", {-8, 8}}}},
      {"log_softmax", "x: " T_("(4, 130)"), "gv = R.nn.log_softmax(x, axis=-1)", kFloats, {}, {{"x", {-8, 8}}}},
      {"layer_norm", "x: " T_("(2, 5, 96)") ", g: " T_("(96,)") ", b: " T_("(96,)"),
       "gv = R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-5)", kFloatsF64, {}, {}, 4},
      {"layer_norm_two_axes", "x: " T_("(3, 4, 9)") ", g: " T_("(4, 9)") ", b: " T_("(4, 9)"),
       "gv = R.nn.layer_norm(x, g, b, axes=[1, 2], epsilon=1e-3)", kFloats, {}, {}, 4},
      {"softmax_epilogue", "x: " T_("(6, 40)"), "a = R.nn.softmax(x, axis=-1)\nb = R.multiply(a, x)\ngv = R.add(b, x)", kFloats,
       {}, {{"x", {-8, 8}}}},
      // ---- pooling ----
      {"max_pool", "x: " T_("(2, 3, 11, 10)"), "gv = R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
       {"float32", "float16", "int32"}},
      {"avg_pool_include_pad", "x: " T_("(1, 4, 9, 9)"),
       "a = R.nn.avg_pool2d(x, pool_size=[3, 2], strides=[2, 1], padding=[1, 0, 1, 1], count_include_pad=True)\n"
       "b = R.nn.avg_pool2d(x, pool_size=[3, 2], strides=[2, 1], padding=[1, 0, 1, 1], count_include_pad=False)\n"
       "gv = R.add(a, b)", kFloats},
      {"pool_ceil_nhwc", "x: " T_("(2, 8, 7, 3)"),
       "gv = R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2], ceil_mode=True, layout=\"NHWC\")", kFloats, {}, {}, 1,
       "a = R.permute_dims(x, axes=[0, 3, 1, 2])\nb = R.nn.max_pool2d(a, pool_size=[2, 2], strides=[2, 2], ceil_mode=True)\n"
       "gv = R.permute_dims(b, axes=[0, 2, 3, 1])"},
      {"adaptive_avg_pool", "x: " T_("(2, 5, 7, 9)"),
       "a = R.nn.adaptive_avg_pool2d(x, output_size=[3, 4])\nb = R.nn.adaptive_avg_pool2d(x, output_size=[1, 1])\n"
       "c = R.sum(a, axis=[2, 3], keepdims=True)\ngv = R.add(b, c)", kFloats, {}, {}, 4},
      // Global average pools run as row reductions (a group of threads per channel).
      {"global_avg_pool_se", "x: " T_("(2, 16, 33, 35)"),
       "p = R.nn.adaptive_avg_pool2d(x, output_size=[1, 1])\ns = R.sigmoid(p)\ngv = R.multiply(x, s)", kFloats, {}, {}, 4},
      {"global_avg_pool_nhwc", "x: " T_("(3, 9, 10, 24)"),
       "gv = R.nn.adaptive_avg_pool2d(x, output_size=[1, 1], layout=\"NHWC\")", kFloats, {}, {}, 4,
       "a = R.permute_dims(x, axes=[0, 3, 1, 2])\nb = R.nn.adaptive_avg_pool2d(a, output_size=[1, 1])\n"
       "gv = R.permute_dims(b, axes=[0, 2, 3, 1])"},
      // ---- matmul ----
      {"matmul_odd", "x: " T_("(37, 53)") ", y: " T_("(53, 29)"), "gv = R.matmul(x, y)", kFloatsF64, {}, {}, 8},
      // 16-bit: the 64 x 64 tensor-core tile where the 128 x 128 grid would leave SMs idle (M > 64,
      // K too short for split-K), partial tiles in M and N.
      {"matmul_small_mma_tiles", "x: " T_("(150, 64)") ", y: " T_("(64, 2100)"), "gv = R.matmul(x, y)", kFloats, {}, {}, 16},
      // At most 32 rows: the 32 x 128 tiles (gemm_wide), three of them, the last one ragged.
      {"matmul_wide_rows", "x: " T_("(29, 70)") ", y: " T_("(70, 300)"), "gv = R.matmul(x, y)", kFloats, {}, {}, 8},
      {"matmul_int", "x: " T_("(19, 21)") ", y: " T_("(21, 70)"), "gv = R.matmul(x, y)", {"int32", "int64"}},
      {"matmul_batch_broadcast", "x: " T_("(2, 1, 5, 7)") ", y: " T_("(3, 7, 66)"), "gv = R.matmul(x, y)", kFloats, {}, {}, 8},
      // A 2-D right-hand side shared by every batch: the batch folds into the rows, also under a
      // fused permute prologue (ViT's attention projection) and with a broadcast left operand.
      {"matmul_batch_fold", "x: " T_("(3, 5, 7)") ", y: " T_("(7, 66)"), "gv = R.matmul(x, y)", kFloats, {}, {}, 8},
      {"matmul_batch_fold_permuted_bias", "x: " T_("(1, 9, 24)") ", w: " T_("(24, 130)") ", b: " T_("(130,)"),
       "t = R.permute_dims(x, axes=[1, 0, 2])\na = R.matmul(t, w)\ngv = R.add(a, b)", kFloats, {}, {}, 8},
      {"matmul_batch_fold_4d", "x: " T_("(2, 3, 4, 33)") ", y: " T_("(33, 5)"), "gv = R.matmul(x, y)", kFloats, {}, {}, 8},
      {"matmul_vectors", "x: " T_("(7,)") ", y: " T_("(2, 7, 5)") ", z: " T_("(5,)"),
       "a = R.matmul(x, y)\nb = R.matmul(a, z)\ngv = R.sum(b)", kFloats, {}, {}, 8},
      {"matmul_bias_relu", "x: " T_("(70, 33)") ", w: " T_("(33, 65)") ", b: " T_("(65,)"),
       "a = R.matmul(x, w)\nc = R.add(a, b)\ngv = R.nn.relu(c)", kFloats, {}, {}, 8},
      {"matmul_transposed_weight", "x: " T_("(9, 40)") ", w: " T_("(17, 40)"),
       "t = R.permute_dims(w, axes=[1, 0])\ngv = R.matmul(x, t)", kFloats, {}, {}, 8},
      {"matmul_out_dtype", "x: R.Tensor((5, 80), dtype=\"float16\"), y: R.Tensor((80, 6), dtype=\"float16\")",
       "gv = R.matmul(x, y, out_dtype=\"float32\")", {"float32"}, {}, {}, 8,
       "a = R.astype(x, dtype=\"float32\")\nb = R.astype(y, dtype=\"float32\")\ngv = R.matmul(a, b)"},
      // The split-K kernel (few regular tiles, long K): four groups, and eight with an epilogue.
      {"matmul_split_k4", "x: " T_("(45, 300)") ", y: " T_("(300, 70)"), "gv = R.matmul(x, y)", kFloats, {}, {}, 8},
      {"matmul_split_k8_bias_relu", "x: " T_("(33, 1030)") ", w: " T_("(1030, 97)") ", b: " T_("(97,)"),
       "a = R.matmul(x, w)\nc = R.add(a, b)\ngv = R.nn.relu(c)", kFloats, {}, {}, 16},
      // 16-bit split-K on tensor cores over batches and several row tiles (the grid-stride loops
      // around the groups' barriers), K not a multiple of the groups' 128-deep stride.
      {"matmul_mma_split_k_batched", "x: " T_("(6, 200, 1100)") ", y: " T_("(6, 1100, 130)"), "gv = R.matmul(x, y)",
       kFloats, {}, {}, 16},
      // ---- conv2d ----
      {"conv2d_split_k8", "x: " T_("(1, 64, 7, 7)") ", w: " T_("(96, 64, 3, 3)"),
       "gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])", kFloats, {}, {}, 16},
      {"conv2d_small_mma_tiles_relu", "x: " T_("(1, 24, 40, 40)") ", w: " T_("(96, 24, 3, 3)"),
       "r = R.nn.relu(x)\ngv = R.nn.conv2d(r, w, padding=[1, 1, 1, 1])", kFloats, {}, {}, 16},
      {"conv2d_gemm", "x: " T_("(2, 16, 9, 9)") ", w: " T_("(32, 16, 3, 3)"),
       "gv = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1])", kFloats, {}, {}, 8},
      {"conv2d_stride_dilation_groups", "x: " T_("(1, 8, 13, 12)") ", w: " T_("(32, 4, 3, 2)"),
       "gv = R.nn.conv2d(x, w, strides=[2, 1], padding=[2, 1, 0, 1], dilation=[2, 1], groups=2)", kFloats, {}, {}, 8},
      // Group channels a multiple of every slice depth (32): K runs over the taps, the channels
      // within each. Strided, dilated, grouped and zero-padded on the thin kernels (split-K); a
      // fused reflection pad, bias and ReLU on the regular ones (272 small tiles).
      {"conv2d_taps_outer_strided_dilated_groups", "x: " T_("(1, 64, 11, 10)") ", w: " T_("(64, 32, 3, 3)"),
       "gv = R.nn.conv2d(x, w, strides=[2, 1], padding=[1, 2, 1, 2], dilation=[1, 2], groups=2)", kFloats, {}, {}, 16},
      {"conv2d_taps_outer_reflect_bias_relu", "x: " T_("(4, 32, 66, 66)") ", w: " T_("(64, 32, 3, 3)") ", b: " T_("(1, 64, 1, 1)"),
       "p = R.nn.pad(x, pad_width=[0, 0, 0, 0, 1, 1, 1, 1], pad_mode=\"reflect\")\na = R.nn.conv2d(p, w)\n"
       "c = R.add(a, b)\ngv = R.nn.relu(c)", kFloats, {}, {}, 16},
      {"conv2d_depthwise", "x: " T_("(2, 6, 10, 7)") ", w: " T_("(6, 1, 3, 3)"),
       "gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], groups=6)", kFloats, {}, {}, 8},
      // The direct kernel with several output channels per group: each thread computes a group's
      // channels together; with few pixels and a long reduction (165 = 33 channels x 5 rows, not
      // a multiple of the four threads that share a pixel) the reduction is split among them, a
      // fused ReLU prologue and bias epilogue around it.
      // A run of adjacent outputs per thread (unit stride along the width), the row's end inside a run.
      {"conv2d_depthwise_7x7_rows_relu_bias", "x: " T_("(1, 4, 11, 13)") ", w: " T_("(4, 1, 7, 7)") ", b: " T_("(1, 4, 1, 1)"),
       "r = R.nn.relu(x)\na = R.nn.conv2d(r, w, padding=[3, 2, 3, 4], groups=4)\ngv = R.add(a, b)", kFloats, {}, {}, 16},
      {"conv2d_few_outputs_rows_of_two", "x: " T_("(1, 2, 6, 9)") ", w: " T_("(18, 1, 3, 5)"),
       "gv = R.nn.conv2d(x, w, strides=[2, 1], padding=[1, 2, 1, 2], groups=2)", kFloats, {}, {}, 8},
      {"conv2d_few_outputs_grouped", "x: " T_("(2, 8, 9, 9)") ", w: " T_("(6, 4, 3, 3)"),
       "gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], groups=2)", kFloats, {}, {}, 8},
      {"conv2d_few_outputs_split_reduction", "x: " T_("(1, 33, 20, 21)") ", w: " T_("(3, 33, 5, 5)") ", b: " T_("(1, 3, 1, 1)"),
       "r = R.nn.relu(x)\na = R.nn.conv2d(r, w, padding=[2, 2, 2, 2])\ngv = R.add(a, b)", kFloats, {}, {}, 16},
      // Split as above, but strided along the width: no runs of outputs sharing their inputs.
      {"conv2d_few_outputs_split_strided", "x: " T_("(1, 33, 20, 21)") ", w: " T_("(3, 33, 5, 5)"),
       "gv = R.nn.conv2d(x, w, strides=[1, 2], padding=[2, 2, 2, 2])", kFloats, {}, {}, 16},
      {"conv2d_nhwc_bias_relu", "x: " T_("(1, 7, 6, 5)") ", w: " T_("(3, 3, 5, 20)") ", b: " T_("(20,)"),
       "a = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], data_layout=\"NHWC\", kernel_layout=\"HWIO\")\nc = R.add(a, b)\n"
       "gv = R.nn.relu(c)", kFloats, {}, {}, 8,
       "t = R.permute_dims(x, axes=[0, 3, 1, 2])\nu = R.permute_dims(w, axes=[3, 2, 0, 1])\n"
       "a0 = R.nn.conv2d(t, u, padding=[1, 1, 1, 1])\na = R.permute_dims(a0, axes=[0, 2, 3, 1])\nc = R.add(a, b)\n"
       "gv = R.nn.relu(c)"},
      {"conv2d_batch_norm", "x: " T_("(1, 3, 8, 8)") ", w: " T_("(16, 3, 3, 3)") ", g: " T_("(16,)") ", b: " T_("(16,)") ", m: " T_("(16,)") ", pv: " T_("(16,)"),
       "a = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])\nbn = R.nn.batch_norm(a, g, b, m, pv, axis=1, training=False)\nc = bn[0]\n"
       "gv = R.nn.relu(c)", kFloats, {}, {{"pv", {0.5, 2}}}, 8},
      {"conv2d_int", "x: " T_("(1, 2, 5, 5)") ", w: " T_("(16, 2, 2, 2)"), "gv = R.nn.conv2d(x, w)", {"int32"}},
      {"dropout", "x: " T_("(3, 8)"), "d = R.nn.dropout(x, rate=0.25)\na = d[0]\nb = d[1]\ngv = R.add(a, b)", kFloats},
      // ---- more unary math, rounding, predicates, logical, modulo ----
      {"trig", "x: " T_("(3, 41)"),
       "a = R.sin(x)\nb = R.cos(x)\nc = R.tan(x)\nd = R.asin(x)\ne = R.acos(x)\nf = R.atan(x)\ng = R.sinh(x)\n"
       "h = R.cosh(x)\ni = R.asinh(x)\nj = R.atanh(x)\nk = R.add(a, b)\nl = R.add(c, d)\nm = R.add(e, f)\n"
       "n = R.add(g, h)\no = R.add(i, j)\np = R.add(k, l)\nq = R.add(m, n)\nr = R.add(p, q)\ngv = R.add(r, o)",
       kFloatsF64, {}, {{"x", {-0.9, 0.9}}}, 4},
      {"acosh", "p: " T_("(37,)"), "gv = R.acosh(p)", kFloatsF64, {}, {{"p", {1, 6}}}},
      {"rounding_sign", "x: " T_("(5, 13)"),
       "a = R.floor(x)\nb = R.ceil(x)\nc = R.round(x)\nd = R.trunc(x)\ne = R.sign(x)\nf = R.add(a, b)\n"
       "g = R.add(c, d)\nh = R.multiply(f, e)\ngv = R.add(g, h)", kAllNumbers, {}, {{"x", {-3, 3}}}},
      {"round_half_to_even", "x: " T_("(29,)") ", h: " T_("()"), "a = R.multiply(x, h)\ngv = R.round(a)", kFloatsF64,
       {}, {{"x", {-9, 9, true}}, {"h", {0.5, 0.5}}}},
      {"rounding_bool", "x: " T_("(3, 7)"), "a = R.round(x)\nb = R.sign(a)\nc = R.floor(b)\nd = R.ceil(c)\ngv = R.trunc(d)",
       {"bool"}},
      {"predicates", "x: " T_("(4, 17)") ", z: " T_("()"),
       "a = R.log(x)\nb = R.divide(x, z)\nc = R.isnan(a)\nd = R.isinf(b)\ne = R.isfinite(a)\n"
       "f = R.logical_or(c, d)\ng = R.logical_xor(f, e)\nh = R.isfinite(b)\ni = R.logical_not(h)\ngv = R.logical_and(g, i)",
       kFloatsF64, {}, {{"z", {0, 0}}}},
      {"logical", "x: " T_("(3, 1, 5)") ", y: " T_("(4, 5)"),
       "a = R.logical_and(x, y)\nb = R.logical_or(x, y)\nc = R.logical_xor(a, b)\nd = R.logical_not(c)\n"
       "gv = R.logical_xor(d, y)", {"bool"}},
      {"mod_floor_mod", "x: " T_("(6, 11)") ", p: " T_("(6, 1)"),
       "a = R.mod(x, p)\nb = R.floor_mod(x, p)\nq = R.negative(p)\nc = R.mod(x, q)\nd = R.floor_mod(x, q)\n"
       "e = R.add(a, b)\nf = R.add(c, d)\ngv = R.add(e, f)",
       {"float32", "float16", "float64", "int32", "int8", "int64"}, {}, {{"p", {1, 5}}, {"x", {-20, 20}}}},
      {"mod_unsigned", "x: " T_("(23,)") ", p: " T_("(23,)"), "a = R.mod(x, p)\nb = R.floor_mod(x, p)\ngv = R.add(a, b)",
       {"uint8"}, {}, {{"p", {1, 7}}, {"x", {0, 200}}}},
      // ---- flip, tile, tril / triu, gathers ----
      {"flip", "x: " T_("(3, 5, 7)"), "a = R.flip(x, axis=1)\ngv = R.flip(a, axis=-1)", kAll},
      {"tile", "x: " T_("(3, 1, 5)"), "gv = R.tile(x, repeats=[2, 1, 3, 2])", kAll},
      {"tile_fused", "x: " T_("(4, 3)"), "a = R.tile(x, repeats=[3])\nb = R.negative(a)\ngv = R.flip(b, axis=0)", kNumeric},
      {"tril", "x: " T_("(2, 5, 7)"), "gv = R.tril(x, k=1)", kAll},
      {"triu", "x: " T_("(6, 4)"), "a = R.triu(x, k=-2)\nb = R.tril(x, k=0)\ngv = R.add(a, b)", kNumeric},
      {"gather_elements_axis1", "x: " T_("(4, 6)") ", idx: R.Tensor((4, 3), dtype=\"int64\")",
       "gv = R.gather_elements(x, idx, axis=1)", kAll, {}, {{"idx", {-6, 6}}}},
      {"gather_elements_axis0", "x: " T_("(5, 3)") ", idx: R.Tensor((7, 2), dtype=\"int32\")",
       "a = R.gather_elements(x, idx, axis=0)\ngv = R.multiply(a, a)", kNumeric, {}, {{"idx", {-5, 5}}}},
      {"gather_nd", "x: " T_("(5, 4, 3)") ", idx: R.Tensor((2, 3, 2), dtype=\"int32\")", "gv = R.gather_nd(x, idx)", kAll,
       {}, {{"idx", {-4, 4}}}},
      {"gather_nd_batch", "x: " T_("(2, 5, 3)") ", idx: R.Tensor((2, 4, 1), dtype=\"int64\")",
       "gv = R.gather_nd(x, idx, batch_dims=1)", {"float32", "float16", "int32"}, {}, {{"idx", {-5, 5}}}},
      // ---- scatter (duplicate indices included: the host's order decides) ----
      {"scatter_elements", "x: " T_("(5, 6)") ", idx: R.Tensor((3, 6), dtype=\"int64\"), u: " T_("(3, 6)"),
       "a = R.scatter_elements(x, idx, u, axis=0)\nb = R.scatter_elements(x, idx, u, axis=0, reduction=\"add\")\n"
       "c = R.scatter_elements(x, idx, u, axis=0, reduction=\"mul\")\n"
       "d = R.scatter_elements(x, idx, u, axis=0, reduction=\"min\")\n"
       "e = R.scatter_elements(x, idx, u, axis=0, reduction=\"max\")\nf = R.add(a, b)\ng = R.add(c, d)\nh = R.add(f, g)\n"
       "gv = R.add(h, e)", kNumeric, {}, {{"idx", {-5, 5}}}},
      {"scatter_elements_axis1", "x: " T_("(3, 7)") ", idx: R.Tensor((2, 9), dtype=\"int32\"), u: " T_("(2, 9)"),
       "gv = R.scatter_elements(x, idx, u, axis=1)", kAll, {}, {{"idx", {-7, 7}}}},
      {"scatter_nd", "x: " T_("(4, 5, 3)") ", idx: R.Tensor((6, 1), dtype=\"int64\"), u: " T_("(6, 5, 3)"),
       "a = R.scatter_nd(x, idx, u)\nb = R.scatter_nd(x, idx, u, reduction=\"add\")\ngv = R.add(a, b)", kNumeric, {},
       {{"idx", {-4, 4}}}},
      {"scatter_nd_points", "x: " T_("(4, 5, 3)") ", idx: R.Tensor((2, 3, 2), dtype=\"int32\"), u: " T_("(2, 3, 3)"),
       "a = R.scatter_nd(x, idx, u, reduction=\"max\")\nb = R.scatter_nd(x, idx, u, reduction=\"mul\")\n"
       "c = R.scatter_nd(x, idx, u, reduction=\"min\")\nd = R.add(a, b)\ngv = R.add(d, c)",
       {"float32", "float64", "int32", "int64"}, {}, {{"idx", {-4, 4}}}},
      {"scatter_nd_bool", "x: " T_("(6, 2)") ", idx: R.Tensor((4, 1), dtype=\"int64\"), u: " T_("(4, 2)"),
       "gv = R.scatter_nd(x, idx, u)", {"bool", "uint8"}, {}, {{"idx", {0, 6}}}},
      // ---- image.resize2d ----
      {"resize_linear", "x: " T_("(2, 3, 5, 4)"),
       "a = R.image.resize2d(x, R.shape([7, 9]))\n"
       "b = R.image.resize2d(x, R.shape([7, 9]), coordinate_transformation_mode=\"align_corners\")\n"
       "c = R.image.resize2d(x, R.shape([7, 9]), coordinate_transformation_mode=\"pytorch_half_pixel\")\n"
       "d = R.add(a, b)\ngv = R.add(d, c)", kFloatsF64, {}, {}, 4},
      {"resize_linear_down_asymmetric", "x: " T_("(1, 2, 9, 11)"),
       "gv = R.image.resize2d(x, R.shape([4, 3]), coordinate_transformation_mode=\"asymmetric\")", kFloats},
      {"resize_nearest", "x: " T_("(1, 3, 4, 5)"),
       "a = R.image.resize2d(x, R.shape([8, 10]), method=\"nearest_neighbor\", "
       "coordinate_transformation_mode=\"asymmetric\", "
       "rounding_method=\"round_prefer_ceil\")\n"
       "b = R.image.resize2d(x, R.shape([8, 10]), method=\"nearest_neighbor\", "
       "coordinate_transformation_mode=\"asymmetric\", rounding_method=\"floor\")\n"
       "c = R.image.resize2d(x, R.shape([8, 10]), method=\"nearest_neighbor\", "
       "coordinate_transformation_mode=\"tf_half_pixel_for_nn\", "
       "rounding_method=\"round_prefer_floor\")\n"
       "d = R.image.resize2d(x, R.shape([8, 10]), method=\"nearest_neighbor\", "
       "coordinate_transformation_mode=\"half_pixel\", rounding_method=\"round\")\n"
       "f = R.add(a, b)\ng = R.add(c, d)\ngv = R.add(f, g)", kFloats},
      // PyTorch's nearest upsampling (integer factors 3 and 2) with a reflection pad, read by a
      // convolution's operand loads as style_transfer's upsampling layers are.
      {"resize_nearest_upscale_pad_conv", "x: " T_("(1, 2, 3, 4)") ", w: " T_("(20, 2, 3, 3)"),
       "a = R.image.resize2d(x, R.shape([9, 8]), method=\"nearest_neighbor\", "
       "coordinate_transformation_mode=\"asymmetric\", rounding_method=\"floor\")\n"
       "b = R.nn.pad(a, pad_width=[0, 0, 0, 0, 1, 1, 1, 1], pad_mode=\"reflect\")\ngv = R.nn.conv2d(b, w)",
       kFloats, {}, {}, 8},
      {"resize_nearest_down_ceil", "x: " T_("(1, 2, 7, 8)"),
       "gv = R.image.resize2d(x, R.shape([3, 3]), method=\"nearest_neighbor\", rounding_method=\"ceil\")", kFloats},
      {"resize_cubic", "x: " T_("(1, 2, 6, 5)"),
       "a = R.image.resize2d(x, R.shape([9, 8]), method=\"cubic\")\n"
       "b = R.image.resize2d(x, R.shape([9, 8]), method=\"cubic\", cubic_alpha=-0.75, cubic_exclude=1)\ngv = R.add(a, b)",
       kFloatsF64, {}, {}, 4},
      {"resize_nhwc_out_dtype", "x: " T_("(2, 4, 3, 5)"),
       "gv = R.image.resize2d(x, R.shape([6, 7]), layout=\"NHWC\", out_dtype=\"float64\")", {"float32", "float64"}},
      // ---- conv2d_transpose ----
      {"conv2d_transpose", "x: " T_("(1, 4, 5, 6)") ", w: " T_("(4, 3, 3, 3)"),
       "gv = R.nn.conv2d_transpose(x, w, strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[1, 0])", kFloatsF64, {},
       {}, 8},
      {"conv2d_transpose_groups_bias_relu", "x: " T_("(2, 4, 5, 4)") ", w: " T_("(4, 2, 2, 3)") ", b: " T_("(1, 4, 1, 1)"),
       "a = R.nn.conv2d_transpose(x, w, strides=[1, 2], padding=[0, 1, 1, 0], dilation=[2, 1], groups=2)\n"
       "c = R.add(a, b)\ngv = R.nn.relu(c)", kFloats, {}, {}, 8},
      // ---- argmax / argmin (ties and NaN: the first wins) ----
      {"argmax_axis", "x: " T_("(5, 7)"), "gv = R.argmax(x, axis=1)", kAll, {}, {{"x", {-3, 3, true}}}},
      {"argmin_keepdims_epilogue", "x: " T_("(6, 4, 3)"),
       "a = R.argmin(x, axis=1, keepdims=True)\ngv = R.astype(a, dtype=\"int32\")", kNumeric, {}, {{"x", {-3, 3, true}}}},
      {"argmax_flat", "x: " T_("(9, 13)"), "gv = R.argmax(x)", {"float32", "int32", "uint8"}},
      {"argmax_nan_prologue", "x: " T_("(4, 19)"), "a = R.log(x)\ngv = R.argmax(a, axis=-1, keepdims=True)", kFloatsF64},
      // ---- cumsum ----
      {"cumsum_axis1", "x: " T_("(4, 9)"), "gv = R.cumsum(x, axis=1)", kNumeric, {}, {}, 4},
      {"cumsum_exclusive_axis0", "x: " T_("(6, 5)"), "gv = R.cumsum(x, axis=0, exclusive=True)", kFloatsF64, {}, {}, 4},
      {"cumsum_flat_int64", "x: " T_("(3, 4, 5)"), "gv = R.cumsum(x, dtype=\"int64\")", {"float32", "int32", "int8", "bool"}},
      // ---- topk (ties by lower index) ----
      {"topk_both", "x: " T_("(4, 11)"),
       "t = R.topk(x, k=3, axis=-1)\na = t[0]\nb = t[1]\nc = R.astype(b, dtype=\"{dt}\")\ngv = R.add(a, c)", kNumeric,
       {}, {{"x", {-3, 3, true}}}},
      {"topk_smallest_indices", "x: " T_("(7, 3, 2)"),
       "gv = R.topk(x, k=4, axis=0, ret_type=\"indices\", largest=False, dtype=\"int64\")", kAll, {},
       {{"x", {-3, 3, true}}}},
      {"topk_values", "x: " T_("(5, 6)"), "gv = R.topk(x, k=6, axis=1, ret_type=\"values\")", kFloatsF64},
      {"prod", "x: " T_("(3, 7)"), "gv = R.prod(x, axis=[1])", {"float32", "float64", "int32", "int64"}, {},
       {{"x", {0.5, 1.5}}}, 4},
      // ---- attention: the plain kernel for what is not decomposed (grouped key heads, causal masks
      // over symbolic lengths); the decomposition into matmul / softmax. Not float64: the host kernel
      // reads its operands as float ----
      {"attention_causal_gqa", "q: " T_("(2, 5, 4, 8)") ", k: " T_("(2, 5, 2, 8)") ", v: " T_("(2, 5, 2, 3)"),
       "gv = R.nn.attention(q, k, v, causal_mask=\"TopLeft\")", kFloats, {}, {}, 8},
      {"attention_decomposed", "q: " T_("(2, 5, 3, 8)") ", k: " T_("(2, 6, 3, 8)") ", v: " T_("(2, 6, 3, 4)"),
       "gv = R.nn.attention(q, k, v, causal_mask=\"BottomRight\")", kFloats, {}, {}, 8},
      {"sym_attention_causal", "q: " T_("(1, \"n\", 2, 4)") ", k: " T_("(1, \"n\", 2, 4)") ", v: " T_("(1, \"n\", 2, 4)"),
       "gv = R.nn.attention(q, k, v, causal_mask=\"TopLeft\")", kFloats, {{"n", 9}}, {}, 8},
      {"attention_bias_bottom_right", "q: " T_("(1, 3, 4, 6)") ", k: " T_("(1, 7, 2, 6)") ", v: " T_("(1, 7, 2, 5)")
       ", m: " T_("(1, 4, 1, 7)"),
       "gv = R.nn.attention(q, k, v, m, scale=T.float32(0.25), causal_mask=\"BottomRight\")", kFloats, {}, {}, 8},
      // ---- symbolic shapes ----
      {"sym_add_softmax", "x: " T_("(\"n\", 19)") ", y: " T_("(19,)"),
       "a = R.add(x, y)\ngv = R.nn.softmax(a, axis=-1)", kFloats, {{"n", 11}}},
      {"sym_reduce_length", "x: " T_("(4, \"n\")"), "gv = R.sum(x, axis=[1])", {"float32", "int32"}, {{"n", 333}}, {}, 4},
      {"sym_matmul", "x: " T_("(\"n\", 24)") ", w: " T_("(24, \"m\")"), "a = R.matmul(x, w)\ngv = R.nn.gelu(a)", kFloats,
       {{"n", 67}, {"m", 5}}, {}, 8},
      {"sym_matmul_batch_fold", "x: " T_("(\"n\", 3, 24)") ", w: " T_("(24, 17)"), "gv = R.matmul(x, w)", kFloats,
       {{"n", 13}}, {}, 8},
      {"sym_concat_take", "x: " T_("(\"n\", 3)") ", y: " T_("(2, 3)") ", idx: R.Tensor((\"m\",), dtype=\"int64\")",
       "a = R.concat((x, y), axis=0)\ngv = R.take(a, idx, axis=0)", {"float32", "int32"}, {{"n", 6}, {"m", 9}},
       {{"idx", {0, 8}}}},
      {"sym_layer_norm_rows", "x: " T_("(\"n\", 64)") ", g: " T_("(64,)") ", b: " T_("(64,)"),
       "gv = R.nn.layer_norm(x, g, b, axes=[-1])", kFloats, {{"n", 7}}, {}, 4},
      {"sym_flip_cumsum", "x: " T_("(\"n\", 6)"), "a = R.flip(x, axis=0)\nb = R.tile(a, repeats=[1, 2])\n"
       "gv = R.cumsum(b, axis=0)", {"float32", "int32"}, {{"n", 13}}, {}, 4},
      {"sym_argmax_topk", "x: " T_("(3, \"n\")"),
       "a = R.argmax(x, axis=1)\nt = R.topk(x, k=4, axis=1, ret_type=\"values\")\nb = R.sum(t, axis=[1])\n"
       "c = R.astype(a, dtype=\"{dt}\")\ngv = R.add(b, c)", {"float32", "int32"}, {{"n", 10}}, {}, 4},
      {"sym_gather_scatter", "x: " T_("(\"n\", 4)") ", idx: R.Tensor((\"m\", 4), dtype=\"int64\"), u: " T_("(\"m\", 4)"),
       "a = R.gather_elements(x, idx, axis=0)\nb = R.scatter_elements(x, idx, u, axis=0, reduction=\"add\")\n"
       "c = R.sum(a, axis=[0], keepdims=True)\ngv = R.add(b, c)", {"float32", "int32"}, {{"n", 7}, {"m", 5}},
       {{"idx", {-7, 7}}}, 4},
      {"sym_resize_tril", "x: " T_("(1, 2, \"n\", \"n\")"),
       "a = R.image.resize2d(x, R.shape([5, 5]))\ngv = R.tril(a, k=-1)", kFloats, {{"n", 7}}},
      {"sym_pool", "x: " T_("(1, 2, \"n\", \"n\")"), "gv = R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2])", kFloats,
       {{"n", 9}}},
  };
  return cases;
}

#undef T_

/// Random inputs for the parameters of `mod`'s main (symbolic dims at the case's values), and the
/// same values as the reference `ref` takes them (16-bit floats widened to float32).
struct CaseInputs {
  std::vector<Tensor> inputs, reference;
};
inline CaseInputs case_inputs(const OpCase& c, const IRModule& mod, const IRModule& ref) {
  CaseInputs out;
  const auto* fn = mod.lookup("main").as<FunctionNode>();
  const auto* ref_fn = ref.lookup("main").as<FunctionNode>();
  uint32_t seed = 1;
  for (size_t i = 0; i < fn->params.size(); ++i) {
    const Var& p = fn->params[i];
    DataType ref_dtype = ref_fn->params[i]->struct_info_.as<TensorStructInfoNode>()->dtype;
    const auto* t = p->struct_info_.as<TensorStructInfoNode>();
    std::vector<int64_t> shape;
    for (const auto& d : *t->shape) {
      if (auto v = as_const_int(d)) shape.push_back(*v);
      else shape.push_back(c.sym_values.at(d.as<PrimVarNode>()->name));
    }
    ValueRange r = c.ranges.count(p->name_hint) ? c.ranges.at(p->name_hint) : ValueRange{};
    Tensor x = random_input(shape, t->dtype, seed++, r);
    out.inputs.push_back(x);
    out.reference.push_back(ref_dtype == t->dtype ? x : converted(x, ref_dtype));
  }
  return out;
}

/// The dtype the reference of a case at `dt` runs in.
inline std::string reference_dtype(const std::string& dt) {
  return is_16bit_float(DataType::parse(dt)) ? "float32" : dt;
}

}  // namespace partita::cudagen_test
