// RewriteAttention: the matmul–scale–softmax–matmul chain as PyTorch / ONNX export multi-head
// attention, before and after in the text format, and the rewritten module computing what the
// chain computed (host VM).
#include <random>

#include "partita/codegen/vm_lowering.h"
#include "partita/runtime/vm.h"
#include "partita/transform/attention.h"
#include "pass_test_util.h"

namespace partita::transform {
namespace {

using partita::testing::check_pass;
using partita::testing::modules_equal;
using partita::testing::parse;

const std::string kHeader = R"(# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tir as T

@I.ir_module
class Module:
)";

/// A BERT-style chain over q, k, v (2, 5, 4, 8): `scale_line` and `mask_lines` fill the middle.
std::string bert_chain(const std::string& params, const std::string& scale_and_mask) {
  return kHeader + "    @R.function\n    def main(q: R.Tensor((2, 5, 4, 8), dtype=\"float32\"), k: R.Tensor((2, 5, 4, 8), dtype=\"float32\"), v: R.Tensor((2, 5, 4, 8), dtype=\"float32\")" +
         params + R"() -> R.Tensor((2, 5, 4, 8), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((2, 4, 5, 8), dtype="float32") = R.permute_dims(q, axes=[0, 2, 1, 3])
            lv1: R.Tensor((2, 4, 8, 5), dtype="float32") = R.permute_dims(k, axes=[0, 2, 3, 1])
            lv2: R.Tensor((2, 4, 5, 8), dtype="float32") = R.permute_dims(v, axes=[0, 2, 1, 3])
            lv3: R.Tensor((2, 4, 5, 5), dtype="float32") = R.matmul(lv, lv1, out_dtype="void")
)" + scale_and_mask +
         R"(            lv7: R.Tensor((2, 4, 5, 8), dtype="float32") = R.matmul(lv6, lv2, out_dtype="void")
            gv: R.Tensor((2, 5, 4, 8), dtype="float32") = R.permute_dims(lv7, axes=[0, 2, 1, 3])
            R.output(gv)
        return gv
)";
}

std::string attention_module(const std::string& params, const std::string& call) {
  return kHeader + "    @R.function\n    def main(q: R.Tensor((2, 5, 4, 8), dtype=\"float32\"), k: R.Tensor((2, 5, 4, 8), dtype=\"float32\"), v: R.Tensor((2, 5, 4, 8), dtype=\"float32\")" +
         params + R"() -> R.Tensor((2, 5, 4, 8), dtype="float32"):
        with R.dataflow():
            gv: R.Tensor((2, 5, 4, 8), dtype="float32") = )" +
         call + R"(
            R.output(gv)
        return gv
)";
}

const std::string kMaskParam = ", mask: R.Tensor((2, 1, 1, 5), dtype=\"float32\")";

// Hugging Face BERT through ONNX: scores / sqrt(H) + attention mask.
TEST(RewriteAttention, BertWithDivideAndAdditiveMask) {
  std::string before = bert_chain(kMaskParam, R"(            lv4: R.Tensor((2, 4, 5, 5), dtype="float32") = R.divide(lv3, R.const(2.0, "float32"))
            lv5: R.Tensor((2, 4, 5, 5), dtype="float32") = R.add(lv4, mask)
            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv5, axis=-1)
)");
  check_pass(RewriteAttention(), before,
             attention_module(kMaskParam, "R.nn.attention_bias(q, k, v, mask, scale=T.float32(0.5), causal_mask=None, window_size=None)"));
}

TEST(RewriteAttention, ScaleOnEitherSideOrAbsent) {
  std::string left = bert_chain("", R"(            lv5: R.Tensor((2, 4, 5, 5), dtype="float32") = R.multiply(R.const(0.25, "float32"), lv3)
            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv5, axis=3)
)");
  check_pass(RewriteAttention(), left,
             attention_module("", "R.nn.attention(q, k, v, scale=T.float32(0.25), causal_mask=None, window_size=None)"));
  std::string none = bert_chain("", R"(            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv3, axis=-1)
)");
  check_pass(RewriteAttention(), none,
             attention_module("", "R.nn.attention(q, k, v, scale=T.float32(1.0), causal_mask=None, window_size=None)"));
}

Tensor random(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t = Tensor::empty(std::move(shape), DataType::Float(32));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = u(rng);
  return t;
}

// PyTorch's scaled_dot_product_attention export: Q and Kᵀ each multiplied by sqrt(scale).
const std::string kSdpaChain = kHeader + R"(    @R.function
    def main(q: R.Tensor((2, 5, 4, 8), dtype="float32"), k: R.Tensor((2, 5, 4, 8), dtype="float32"), v: R.Tensor((2, 5, 4, 8), dtype="float32")) -> R.Tensor((2, 5, 4, 8), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((2, 4, 5, 8), dtype="float32") = R.permute_dims(q, axes=[0, 2, 1, 3])
            lv1: R.Tensor((2, 4, 8, 5), dtype="float32") = R.permute_dims(k, axes=[0, 2, 3, 1])
            lv2: R.Tensor((2, 4, 5, 8), dtype="float32") = R.permute_dims(v, axes=[0, 2, 1, 3])
            lv3: R.Tensor((2, 4, 5, 8), dtype="float32") = R.multiply(lv, R.const([0.5], "float32"))
            lv4: R.Tensor((2, 4, 8, 5), dtype="float32") = R.multiply(R.const(0.5, "float32"), lv1)
            lv5: R.Tensor((2, 4, 5, 5), dtype="float32") = R.matmul(lv3, lv4, out_dtype="void")
            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv5, axis=-1)
            lv7: R.Tensor((2, 4, 5, 8), dtype="float32") = R.matmul(lv6, lv2, out_dtype="void")
            gv: R.Tensor((2, 5, 4, 8), dtype="float32") = R.permute_dims(lv7, axes=[0, 2, 1, 3])
            R.output(gv)
        return gv
)";

TEST(RewriteAttention, QueryAndKeyScaledSeparately) {
  check_pass(RewriteAttention(), kSdpaChain,
             attention_module("", "R.nn.attention(q, k, v, scale=T.float32(0.25), causal_mask=None, window_size=None)"));
  IRModule before = parse(kSdpaChain);
  IRModule after = RewriteAttention()(before);
  std::vector<Tensor> in = {random({2, 5, 4, 8}, 5), random({2, 5, 4, 8}, 6), random({2, 5, 4, 8}, 7)};
  Tensor want = runtime::VirtualMachine(codegen::build_vm_executable(before)).invoke("main", in)[0];
  Tensor got = runtime::VirtualMachine(codegen::build_vm_executable(after)).invoke("main", in)[0];
  for (int64_t i = 0; i < got.numel(); ++i) ASSERT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], 1e-5f);
}

const std::string kCausalRows =
    "[[0.0, -10000.0, -10000.0, -10000.0, -10000.0], [0.0, 0.0, -10000.0, -10000.0, -10000.0], "
    "[0.0, 0.0, 0.0, -10000.0, -10000.0], [0.0, 0.0, 0.0, 0.0, -10000.0], [0.0, 0.0, 0.0, 0.0, 0.0]]";

// GPT-2 style: a constant lower-triangular mask becomes causal_mask="TopLeft", added or as where().
TEST(RewriteAttention, ConstantTriangularMasksAreCausal) {
  std::string added = bert_chain("", R"(            lv4: R.Tensor((2, 4, 5, 5), dtype="float32") = R.multiply(lv3, R.const(0.5, "float32"))
            lv5: R.Tensor((2, 4, 5, 5), dtype="float32") = R.add(lv4, R.const()" + kCausalRows + R"(, "float32"))
            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv5, axis=-1)
)");
  const std::string causal =
      attention_module("", "R.nn.attention(q, k, v, scale=T.float32(0.5), causal_mask=\"TopLeft\", window_size=None)");
  check_pass(RewriteAttention(), added, causal);
  std::string tril = kCausalRows;
  for (auto [from, to] : {std::pair<std::string, std::string>{"-10000.0", "False"}, {"0.0", "True"}})
    for (size_t at; (at = tril.find(from)) != std::string::npos;) tril.replace(at, from.size(), to);
  std::string where = bert_chain("", R"(            lv4: R.Tensor((2, 4, 5, 5), dtype="float32") = R.multiply(lv3, R.const(0.5, "float32"))
            lv5: R.Tensor((2, 4, 5, 5), dtype="float32") = R.where(R.const()" + tril + R"(, "bool"), lv4, R.const(-1000000000.0, "float32"))
            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv5, axis=-1)
)");
  check_pass(RewriteAttention(), where, causal);
}

// Operands that do not come from the usual permutes get them inserted; a (Skv,) mask is reshaped.
TEST(RewriteAttention, HeadMajorOperandsAndLowRankMasks) {
  std::string before = kHeader + R"(    @R.function
    def main(q: R.Tensor((2, 4, 5, 8), dtype="float16"), kt: R.Tensor((2, 4, 8, 6), dtype="float16"), v: R.Tensor((2, 4, 6, 8), dtype="float16"), mask: R.Tensor((6,), dtype="float16")) -> R.Tensor((2, 4, 5, 8), dtype="float16"):
        with R.dataflow():
            lv3: R.Tensor((2, 4, 5, 6), dtype="float16") = R.matmul(q, kt, out_dtype="void")
            lv5: R.Tensor((2, 4, 5, 6), dtype="float16") = R.add(mask, lv3)
            lv6: R.Tensor((2, 4, 5, 6), dtype="float16") = R.nn.softmax(lv5, axis=-1)
            gv: R.Tensor((2, 4, 5, 8), dtype="float16") = R.matmul(lv6, v, out_dtype="void")
            R.output(gv)
        return gv
)";
  std::string after = kHeader + R"(    @R.function
    def main(q: R.Tensor((2, 4, 5, 8), dtype="float16"), kt: R.Tensor((2, 4, 8, 6), dtype="float16"), v: R.Tensor((2, 4, 6, 8), dtype="float16"), mask: R.Tensor((6,), dtype="float16")) -> R.Tensor((2, 4, 5, 8), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((2, 5, 4, 8), dtype="float16") = R.permute_dims(q, axes=[0, 2, 1, 3])
            lv1: R.Tensor((2, 6, 4, 8), dtype="float16") = R.permute_dims(kt, axes=[0, 3, 1, 2])
            lv2: R.Tensor((2, 6, 4, 8), dtype="float16") = R.permute_dims(v, axes=[0, 2, 1, 3])
            lv3: R.Tensor((1, 1, 1, 6), dtype="float16") = R.reshape(mask, R.shape([1, 1, 1, 6]))
            lv4: R.Tensor((2, 5, 4, 8), dtype="float16") = R.nn.attention_bias(lv, lv1, lv2, lv3, scale=T.float32(1.0), causal_mask=None, window_size=None)
            gv: R.Tensor((2, 4, 5, 8), dtype="float16") = R.permute_dims(lv4, axes=[0, 2, 1, 3])
            R.output(gv)
        return gv
)";
  check_pass(RewriteAttention(), before, after);
}

TEST(RewriteAttention, LeavesChainsWhoseIntermediatesEscape) {
  // The probabilities are a second output: rewriting would compute them twice.
  std::string before = kHeader + R"(    @R.function
    def main(q: R.Tensor((2, 4, 5, 8), dtype="float32"), kt: R.Tensor((2, 4, 8, 5), dtype="float32"), v: R.Tensor((2, 4, 5, 8), dtype="float32")) -> R.Tuple(R.Tensor((2, 4, 5, 8), dtype="float32"), R.Tensor((2, 4, 5, 5), dtype="float32")):
        with R.dataflow():
            lv3: R.Tensor((2, 4, 5, 5), dtype="float32") = R.matmul(q, kt, out_dtype="void")
            p: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv3, axis=-1)
            o: R.Tensor((2, 4, 5, 8), dtype="float32") = R.matmul(p, v, out_dtype="void")
            gv: R.Tuple(R.Tensor((2, 4, 5, 8), dtype="float32"), R.Tensor((2, 4, 5, 5), dtype="float32")) = (o, p)
            R.output(gv)
        return gv
)";
  check_pass(RewriteAttention(), before, before);
  // Softmax over another axis is not attention.
  std::string axis = bert_chain("", R"(            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv3, axis=2)
)");
  check_pass(RewriteAttention(), axis, axis);
  // A mask that is not causal stays a bias, a non-constant scale stays a chain.
  std::string scale = bert_chain(", s: R.Tensor((), dtype=\"float32\")", R"(            lv5: R.Tensor((2, 4, 5, 5), dtype="float32") = R.multiply(lv3, s)
            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv5, axis=-1)
)");
  check_pass(RewriteAttention(), scale, scale);
}


TEST(RewriteAttention, RewrittenModulesComputeTheChain) {
  struct Case {
    std::string params, middle;
    bool with_mask;
  };
  const std::vector<Case> cases = {
      {kMaskParam, R"(            lv4: R.Tensor((2, 4, 5, 5), dtype="float32") = R.divide(lv3, R.const(2.0, "float32"))
            lv5: R.Tensor((2, 4, 5, 5), dtype="float32") = R.add(lv4, mask)
            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv5, axis=-1)
)", true},
      {"", R"(            lv4: R.Tensor((2, 4, 5, 5), dtype="float32") = R.multiply(lv3, R.const(0.5, "float32"))
            lv5: R.Tensor((2, 4, 5, 5), dtype="float32") = R.add(lv4, R.const()" + kCausalRows + R"(, "float32"))
            lv6: R.Tensor((2, 4, 5, 5), dtype="float32") = R.nn.softmax(lv5, axis=-1)
)", false}};
  for (const Case& c : cases) {
    IRModule before = parse(bert_chain(c.params, c.middle));
    IRModule after = RewriteAttention()(before);
    ASSERT_NE(script::print_module(after).find("R.nn.attention"), std::string::npos);
    std::vector<Tensor> in = {random({2, 5, 4, 8}, 1), random({2, 5, 4, 8}, 2), random({2, 5, 4, 8}, 3)};
    if (c.with_mask) in.push_back(random({2, 1, 1, 5}, 4));
    runtime::VirtualMachine vm_before(codegen::build_vm_executable(before));
    runtime::VirtualMachine vm_after(codegen::build_vm_executable(after));
    Tensor want = vm_before.invoke("main", in)[0], got = vm_after.invoke("main", in)[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_NEAR(got.data_as<float>()[i], want.data_as<float>()[i], 1e-5f);
  }
}

}  // namespace
}  // namespace partita::transform
