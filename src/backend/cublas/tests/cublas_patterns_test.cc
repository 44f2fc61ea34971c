// The cublas.* pattern table and its check: TVM's names and order, every pattern taken where it
// applies (for every dtype pair cuBLAS runs), and each rule of the check refusing what breaks it
// (the module then keeps the call, or a shorter pattern takes part of it). Partitioned modules
// are compared with expected TVMScript text structurally.
#include <gtest/gtest.h>

#include "../cublas.h"
#include "cublas_test_util.h"
#include "partita/backend/registry.h"
#include "partita/ir/block_builder.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/ops.h"
#include "partita/op/registry.h"
#include "partita/script/printer.h"
#include "partita/transform/pattern_registry.h"

namespace partita::backend::cublas::test {
namespace {

TEST(CublasPatterns, TvmsNamesInTvmsOrder) {
  std::vector<std::string> names;
  for (const auto& p : cublas_patterns()) names.push_back(p.name);
  // TVM's list; matmul_transposed_dequantize (between the last two) needs relax.dequantize,
  // which Partita does not have.
  std::vector<std::string> want = {"cublas.matmul",
                                   "cublas.matmul_bias",
                                   "cublas.matmul_bias_relu",
                                   "cublas.matmul_bias_gelu",
                                   "cublas.matmul_transposed",
                                   "cublas.matmul_transposed_bias",
                                   "cublas.matmul_transposed_bias_relu",
                                   "cublas.matmul_transposed_bias_gelu",
                                   "cublas.matmul_transposed_multiply"};
  EXPECT_EQ(names, want);
  // Registered: the last has the highest priority, as in TVM.
  auto registered = transform::get_patterns_with_prefix("cublas");
  ASSERT_EQ(registered.size(), want.size());
  EXPECT_EQ(registered.front().name, want.back());
}

struct Case {
  std::string name;
  std::string params;
  std::vector<std::string> body;
  std::string ret;
  std::vector<std::string> composites;  // what partition_for_cublas offloads
  std::vector<std::string> left;        // operators main keeps
};

std::string T(const std::string& shape, const std::string& dtype) { return tensor(shape, dtype); }

// Every pattern, for the dtype pairs of TVM's check.
std::vector<Case> accepted_cases() {
  std::vector<Case> out;
  for (std::string dt : {"float32", "float16", "bfloat16"}) {
    std::string x = "x: " + T("(16, 32)", dt), w = "w: " + T("(32, 24)", dt), wt = "w: " + T("(24, 32)", dt),
                b = "b: " + T("(24,)", dt), r = T("(16, 24)", dt);
    std::string perm = "wt: " + T("(32, 24)", dt) + " = R.permute_dims(w, axes=None)";
    out.push_back({"matmul_" + dt, x + ", " + w, {"gv: " + r + " = R.matmul(x, w, out_dtype=\"void\")"}, r, {"cublas.matmul"}, {}});
    out.push_back({"matmul_bias_" + dt, x + ", " + w + ", " + b,
                   {"m: " + r + " = R.matmul(x, w, out_dtype=\"void\")", "gv: " + r + " = R.add(m, b)"}, r,
                   {"cublas.matmul_bias"}, {}});
    // add commutes: bias + product is the same pattern.
    out.push_back({"matmul_bias_commuted_" + dt, x + ", " + w + ", " + b,
                   {"m: " + r + " = R.matmul(x, w, out_dtype=\"void\")", "gv: " + r + " = R.add(b, m)"}, r,
                   {"cublas.matmul_bias"}, {}});
    // GELU only with a 16-bit result (patterns.cc): refused_cases has the float32 one.
    std::vector<std::string> acts = {"relu"};
    if (dt != "float32") acts.push_back("gelu");
    for (const std::string& act : acts)
      out.push_back({"matmul_bias_" + act + "_" + dt, x + ", " + w + ", " + b,
                     {"m: " + r + " = R.matmul(x, w, out_dtype=\"void\")", "a: " + r + " = R.add(m, b)",
                      "gv: " + r + " = R.nn." + act + "(a)"},
                     r, {"cublas.matmul_bias_" + act}, {}});
    out.push_back({"matmul_transposed_" + dt, x + ", " + wt, {perm, "gv: " + r + " = R.matmul(x, wt, out_dtype=\"void\")"}, r,
                   {"cublas.matmul_transposed"}, {}});
    out.push_back({"matmul_transposed_bias_" + dt, x + ", " + wt + ", " + b,
                   {perm, "m: " + r + " = R.matmul(x, wt, out_dtype=\"void\")", "gv: " + r + " = R.add(m, b)"}, r,
                   {"cublas.matmul_transposed_bias"}, {}});
    for (const std::string& act : acts)
      out.push_back({"matmul_transposed_bias_" + act + "_" + dt, x + ", " + wt + ", " + b,
                     {perm, "m: " + r + " = R.matmul(x, wt, out_dtype=\"void\")", "a: " + r + " = R.add(m, b)",
                      "gv: " + r + " = R.nn." + act + "(a)"},
                     r, {"cublas.matmul_transposed_bias_" + act}, {}});
    std::string one = T("(1,)", dt);
    std::string rf = T("(16, 24)", "float32");
    out.push_back({"matmul_transposed_multiply_" + dt, x + ", " + wt + ", sa: " + one + ", sb: " + one,
                   {perm, "m: " + r + " = R.matmul(x, wt, out_dtype=\"void\")", "s: " + one + " = R.multiply(sa, sb)",
                    "p: " + r + " = R.multiply(m, s)", "gv: " + rf + " = R.astype(p, dtype=\"float32\")"},
                   rf, {"cublas.matmul_transposed_multiply"}, {}});
  }
  // 16-bit inputs with a float32 result.
  out.push_back({"matmul_f16_to_f32", "x: " + T("(16, 32)", "float16") + ", w: " + T("(32, 24)", "float16"),
                 {"gv: " + T("(16, 24)", "float32") + " = R.matmul(x, w, out_dtype=\"float32\")"}, T("(16, 24)", "float32"),
                 {"cublas.matmul"}, {}});
  // int8 x int8 -> int32 (reduction axis and the right-hand side's rows in fours).
  out.push_back({"matmul_int8", "x: " + T("(16, 32)", "int8") + ", w: " + T("(32, 24)", "int8"),
                 {"gv: " + T("(16, 24)", "int32") + " = R.matmul(x, w, out_dtype=\"int32\")"}, T("(16, 24)", "int32"),
                 {"cublas.matmul"}, {}});
  out.push_back({"matmul_transposed_int8", "x: " + T("(16, 32)", "int8") + ", w: " + T("(24, 32)", "int8"),
                 {"wt: " + T("(32, 24)", "int8") + " = R.permute_dims(w, axes=[1, 0])",
                  "gv: " + T("(16, 24)", "int32") + " = R.matmul(x, wt, out_dtype=\"int32\")"},
                 T("(16, 24)", "int32"), {"cublas.matmul_transposed"}, {}});
  // Batches: equal, symbolic, a 2-d right-hand side folded into M, and (beyond TVM) broadcast.
  out.push_back({"batched_equal", "x: " + T("(4, 16, 32)", "float16") + ", y: " + T("(4, 32, 8)", "float16"),
                 {"gv: " + T("(4, 16, 8)", "float16") + " = R.matmul(x, y, out_dtype=\"void\")"}, T("(4, 16, 8)", "float16"),
                 {"cublas.matmul"}, {}});
  out.push_back({"batched_symbolic", "x: " + T("(\"n\", 16, 32)", "float32") + ", y: " + T("(\"n\", 32, 8)", "float32"),
                 {"gv: " + T("(\"n\", 16, 8)", "float32") + " = R.matmul(x, y, out_dtype=\"void\")"},
                 T("(\"n\", 16, 8)", "float32"), {"cublas.matmul"}, {}});
  out.push_back({"folded_into_m_symbolic", "x: " + T("(2, \"m\", 32)", "float32") + ", w: " + T("(32, 8)", "float32") +
                     ", b: " + T("(8,)", "float32"),
                 {"mm: " + T("(2, \"m\", 8)", "float32") + " = R.matmul(x, w, out_dtype=\"void\")",
                  "gv: " + T("(2, \"m\", 8)", "float32") + " = R.add(mm, b)"},
                 T("(2, \"m\", 8)", "float32"), {"cublas.matmul_bias"}, {}});
  out.push_back({"broadcast_batch", "x: " + T("(1, 16, 32)", "float32") + ", y: " + T("(3, 32, 8)", "float32"),
                 {"gv: " + T("(3, 16, 8)", "float32") + " = R.matmul(x, y, out_dtype=\"void\")"}, T("(3, 16, 8)", "float32"),
                 {"cublas.matmul"}, {}});
  // Beyond TVM: a residual bias of the product's shape, with an activation.
  out.push_back({"matrix_bias_relu", "x: " + T("(16, 32)", "float32") + ", w: " + T("(32, 24)", "float32") +
                     ", z: " + T("(16, 24)", "float32"),
                 {"m: " + T("(16, 24)", "float32") + " = R.matmul(x, w, out_dtype=\"void\")",
                  "a: " + T("(16, 24)", "float32") + " = R.add(m, z)", "gv: " + T("(16, 24)", "float32") + " = R.nn.relu(a)"},
                 T("(16, 24)", "float32"), {"cublas.matmul_bias_relu"}, {}});
  return out;
}

// One case per rule of the check: what is refused stays in main (or a shorter pattern takes
// the part that passes).
std::vector<Case> refused_cases() {
  std::string f32 = "float32";
  std::vector<Case> out;
  out.push_back({"float64", "x: " + T("(16, 32)", "float64") + ", w: " + T("(32, 24)", "float64"),
                 {"gv: " + T("(16, 24)", "float64") + " = R.matmul(x, w, out_dtype=\"void\")"}, T("(16, 24)", "float64"), {},
                 {"relax.matmul"}});
  // cuBLASLt's GELU is the tanh approximation (3e-4 off erf's): a float32 result keeps its GELU
  // for generated code, and the product and bias still go to cublas.
  out.push_back({"float32_gelu", "x: " + T("(16, 32)", f32) + ", w: " + T("(32, 24)", f32) + ", b: " + T("(24,)", f32),
                 {"m: " + T("(16, 24)", f32) + " = R.matmul(x, w, out_dtype=\"void\")",
                  "a: " + T("(16, 24)", f32) + " = R.add(m, b)", "gv: " + T("(16, 24)", f32) + " = R.nn.gelu(a)"},
                 T("(16, 24)", f32), {"cublas.matmul_bias"}, {"relax.nn.gelu"}});
  out.push_back({"mixed_dtypes", "x: " + T("(16, 32)", "float16") + ", w: " + T("(32, 24)", "float32"),
                 {"gv: " + T("(16, 24)", f32) + " = R.matmul(x, w, out_dtype=\"float32\")"}, T("(16, 24)", f32), {},
                 {"relax.matmul"}});
  out.push_back({"int8_result_not_int32", "x: " + T("(16, 32)", "int8") + ", w: " + T("(32, 24)", "int8"),
                 {"gv: " + T("(16, 24)", "int8") + " = R.matmul(x, w, out_dtype=\"void\")"}, T("(16, 24)", "int8"), {},
                 {"relax.matmul"}});
  out.push_back({"float32_result_float16", "x: " + T("(16, 32)", f32) + ", w: " + T("(32, 24)", f32),
                 {"gv: " + T("(16, 24)", "float16") + " = R.matmul(x, w, out_dtype=\"float16\")"}, T("(16, 24)", "float16"), {},
                 {"relax.matmul"}});
  out.push_back({"symbolic_reduction_axis", "x: " + T("(16, \"k\")", f32) + ", w: " + T("(\"k\", 24)", f32),
                 {"gv: " + T("(16, 24)", f32) + " = R.matmul(x, w, out_dtype=\"void\")"}, T("(16, 24)", f32), {},
                 {"relax.matmul"}});
  out.push_back({"int8_reduction_not_multiple_of_4", "x: " + T("(16, 30)", "int8") + ", w: " + T("(30, 24)", "int8"),
                 {"gv: " + T("(16, 24)", "int32") + " = R.matmul(x, w, out_dtype=\"int32\")"}, T("(16, 24)", "int32"), {},
                 {"relax.matmul"}});
  out.push_back({"int8_rhs_rows_not_multiple_of_4", "x: " + T("(16, 32)", "int8") + ", w: " + T("(32, 22)", "int8"),
                 {"gv: " + T("(16, 22)", "int32") + " = R.matmul(x, w, out_dtype=\"int32\")"}, T("(16, 22)", "int32"), {},
                 {"relax.matmul"}});
  out.push_back({"one_d_operand", "x: " + T("(32,)", f32) + ", w: " + T("(32, 24)", f32),
                 {"gv: " + T("(24,)", f32) + " = R.matmul(x, w, out_dtype=\"void\")"}, T("(24,)", f32), {}, {"relax.matmul"}});
  // int8 products take no bias epilogue (TVM's rule): the matmul goes alone, the add stays.
  out.push_back({"int8_bias", "x: " + T("(16, 32)", "int8") + ", w: " + T("(32, 24)", "int8") + ", b: " + T("(24,)", "int32"),
                 {"m: " + T("(16, 24)", "int32") + " = R.matmul(x, w, out_dtype=\"int32\")",
                  "gv: " + T("(16, 24)", "int32") + " = R.add(m, b)"},
                 T("(16, 24)", "int32"), {"cublas.matmul"}, {"relax.add"}});
  // A bias that is not a vector along the last axis nor the product's shape.
  out.push_back({"bias_column", "x: " + T("(16, 32)", f32) + ", w: " + T("(32, 24)", f32) + ", b: " + T("(16, 1)", f32),
                 {"m: " + T("(16, 24)", f32) + " = R.matmul(x, w, out_dtype=\"void\")", "gv: " + T("(16, 24)", f32) + " = R.add(m, b)"},
                 T("(16, 24)", f32), {"cublas.matmul"}, {"relax.add"}});
  out.push_back({"bias_one_element", "x: " + T("(16, 32)", f32) + ", w: " + T("(32, 24)", f32) + ", b: " + T("(1,)", f32),
                 {"m: " + T("(16, 24)", f32) + " = R.matmul(x, w, out_dtype=\"void\")", "gv: " + T("(16, 24)", f32) + " = R.add(m, b)"},
                 T("(16, 24)", f32), {"cublas.matmul"}, {"relax.add"}});
  out.push_back({"bias_broadcasts_product", "x: " + T("(16, 32)", f32) + ", w: " + T("(32, 24)", f32) + ", b: " + T("(3, 16, 24)", f32),
                 {"m: " + T("(16, 24)", f32) + " = R.matmul(x, w, out_dtype=\"void\")",
                  "gv: " + T("(3, 16, 24)", f32) + " = R.add(m, b)"},
                 T("(3, 16, 24)", f32), {"cublas.matmul"}, {"relax.add"}});
  // The product is also an output: fusing the bias would hide it.
  out.push_back({"leaking_intermediate", "x: " + T("(16, 32)", f32) + ", w: " + T("(32, 24)", f32) + ", b: " + T("(24,)", f32),
                 {"m: " + T("(16, 24)", f32) + " = R.matmul(x, w, out_dtype=\"void\")", "a: " + T("(16, 24)", f32) + " = R.add(m, b)",
                  "gv: R.Tuple(" + T("(16, 24)", f32) + ", " + T("(16, 24)", f32) + ") = (a, m)"},
                 "R.Tuple(" + T("(16, 24)", f32) + ", " + T("(16, 24)", f32) + ")", {"cublas.matmul"}, {"relax.add"}});
  // A permute_dims that is not a swap of the last two axes is no transposed operand.
  out.push_back({"permute_not_last_two", "x: " + T("(4, 16, 32)", f32) + ", w: " + T("(8, 32, 4)", f32),
                 {"wt: " + T("(4, 32, 8)", f32) + " = R.permute_dims(w, axes=[2, 1, 0])",
                  "gv: " + T("(4, 16, 8)", f32) + " = R.matmul(x, wt, out_dtype=\"void\")"},
                 T("(4, 16, 8)", f32), {"cublas.matmul"}, {"relax.permute_dims"}});
  // matmul_transposed_multiply: scales of more than one element; a cast cuBLAS cannot store.
  std::string x = "x: " + T("(16, 32)", f32) + ", w: " + T("(24, 32)", f32);
  std::string perm = "wt: " + T("(32, 24)", f32) + " = R.permute_dims(w, axes=None)";
  out.push_back({"multiply_scale_vector", x + ", sa: " + T("(24,)", f32) + ", sb: " + T("(24,)", f32),
                 {perm, "m: " + T("(16, 24)", f32) + " = R.matmul(x, wt, out_dtype=\"void\")",
                  "s: " + T("(24,)", f32) + " = R.multiply(sa, sb)", "p: " + T("(16, 24)", f32) + " = R.multiply(m, s)",
                  "gv: " + T("(16, 24)", "float16") + " = R.astype(p, dtype=\"float16\")"},
                 T("(16, 24)", "float16"), {"cublas.matmul_transposed"}, {"relax.multiply", "relax.multiply", "relax.astype"}});
  out.push_back({"multiply_cast_to_int", x + ", sa: " + T("(1,)", f32) + ", sb: " + T("(1,)", f32),
                 {perm, "m: " + T("(16, 24)", f32) + " = R.matmul(x, wt, out_dtype=\"void\")",
                  "s: " + T("(1,)", f32) + " = R.multiply(sa, sb)", "p: " + T("(16, 24)", f32) + " = R.multiply(m, s)",
                  "gv: " + T("(16, 24)", "int32") + " = R.astype(p, dtype=\"int32\")"},
                 T("(16, 24)", "int32"), {"cublas.matmul_transposed"}, {"relax.multiply", "relax.multiply", "relax.astype"}});
  return out;
}

void check_case(const Case& c) {
  SCOPED_TRACE(c.name);
  IRModule mod = script::parse_module(module_text(c.params, c.body, c.ret));
  IRModule parted = partition_for_cublas(mod);
  EXPECT_TRUE(well_formed(parted));
  EXPECT_EQ(cublas_composites(parted), c.composites) << script::print_module(parted);
  EXPECT_EQ(ops_in_main(parted), c.left) << script::print_module(parted);
  if (c.composites.empty()) {
    EXPECT_TRUE(structural_equal(parted, mod)) << script::print_module(parted);
  }
}

TEST(CublasPatterns, EveryPatternForEveryDtype) {
  for (const auto& c : accepted_cases()) check_case(c);
}

TEST(CublasPatterns, EachRuleOfTheCheckRefuses) {
  for (const auto& c : refused_cases()) check_case(c);
}

// The whole partitioned module, as text: one Codegen function per match (annotate_codegen),
// constants as parameters (bind_constants=False, TVM's default for cublas).
TEST(CublasPatterns, PartitionedModuleAsText) {
  std::string f16 = "float16";
  IRModule mod = script::parse_module(module_text(
      "x: " + T("(16, 32)", f16) + ", w: " + T("(24, 32)", f16) + ", b: " + T("(24,)", f16),
      {"wt: " + T("(32, 24)", f16) + " = R.permute_dims(w, axes=None)",
       "m: " + T("(16, 24)", f16) + " = R.matmul(x, wt, out_dtype=\"void\")", "a: " + T("(16, 24)", f16) + " = R.add(m, b)",
       "g: " + T("(16, 24)", f16) + " = R.nn.gelu(a)", "gv: " + T("(16, 24)", f16) + " = R.nn.softmax(g, axis=-1)"},
      T("(16, 24)", f16)));
  IRModule expected = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def fused_relax_permute_dims_relax_matmul_relax_add_relax_nn_gelu_cublas(w: R.Tensor((24, 32), dtype="float16"), x: R.Tensor((16, 32), dtype="float16"), b: R.Tensor((24,), dtype="float16")) -> R.Tensor((16, 24), dtype="float16"):
        R.func_attr({"Codegen": "cublas"})
        @R.function
        def local_func(w_1: R.Tensor((24, 32), dtype="float16"), x_1: R.Tensor((16, 32), dtype="float16"), b_1: R.Tensor((24,), dtype="float16")) -> R.Tensor((16, 24), dtype="float16"):
            R.func_attr({"Composite": "cublas.matmul_transposed_bias_gelu"})
            with R.dataflow():
                wt: R.Tensor((32, 24), dtype="float16") = R.permute_dims(w_1, axes=None)
                m: R.Tensor((16, 24), dtype="float16") = R.matmul(x_1, wt, out_dtype="void")
                a: R.Tensor((16, 24), dtype="float16") = R.add(m, b_1)
                gv: R.Tensor((16, 24), dtype="float16") = R.nn.gelu(a)
                R.output(gv)
            return gv

        output: R.Tensor((16, 24), dtype="float16") = local_func(w, x, b)
        return output

    @R.function
    def main(x: R.Tensor((16, 32), dtype="float16"), w: R.Tensor((24, 32), dtype="float16"), b: R.Tensor((24,), dtype="float16")) -> R.Tensor((16, 24), dtype="float16"):
        cls = Module
        with R.dataflow():
            g: R.Tensor((16, 24), dtype="float16") = cls.fused_relax_permute_dims_relax_matmul_relax_add_relax_nn_gelu_cublas(w, x, b)
            gv: R.Tensor((16, 24), dtype="float16") = R.nn.softmax(g, axis=-1)
            R.output(gv)
        return gv
)");
  IRModule parted = partition_for_cublas(mod);
  EXPECT_TRUE(structural_equal(parted, expected)) << script::print_module(parted);
}

// Constants: parameters of the Codegen function by default (TVM's bind_constants=False), kept
// inside with bind_constants.
TEST(CublasPatterns, BindConstants) {
  Tensor w = random_input({8, 6}, DataType::Float(32), 3);
  BlockBuilder bb;
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4, 8}, DataType::Float(32)));
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var gv = bb.emit_output(bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w)})));
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule mod = bb.get();
  auto codegen_params = [](const IRModule& m) {
    for (const auto& [g, f] : m.functions())
      if (auto* fn = f.as<FunctionNode>(); fn && fn->attr_string("Codegen")) return fn->params.size();
    return size_t(0);
  };
  IRModule lifted = partition_for_cublas(mod);
  EXPECT_EQ(cublas_composites(lifted), std::vector<std::string>{"cublas.matmul"});
  EXPECT_EQ(codegen_params(lifted), 2u);  // x and the weight
  IRModule bound = partition_for_cublas(mod, true);
  EXPECT_EQ(cublas_composites(bound), std::vector<std::string>{"cublas.matmul"});
  EXPECT_EQ(codegen_params(bound), 1u);
}

// The backend's prepare step turns a patch embedding (ViT's 16x16 convolution of stride 16) into
// the product the table then takes (the partitioning's constant folding transposes the kernel).
TEST(CublasPatterns, PrepareStepMakesPatchConvolutionsProducts) {
  Tensor w = random_input({8, 3, 4, 4}, DataType::Float(16), 5);
  BlockBuilder bb;
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{2, 3, 16, 16}, DataType::Float(16)));
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var gv = bb.emit_output(bb.emit(op::nn::conv2d(x, make<ConstantNode>(w), {4, 4})));
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule prepared = backend::prepare_for({"cublas"}, bb.get());
  EXPECT_EQ(script::print_module(prepared).find("conv2d"), std::string::npos) << script::print_module(prepared);
  EXPECT_EQ(cublas_composites(partition_for_cublas(prepared, true)),
            std::vector<std::string>{"cublas.matmul"});
}

}  // namespace
}  // namespace partita::backend::cublas::test
