// What the cuda codegen refuses, and how: UnsupportedFunction naming the function and the reason
// (so RunCodegen fails clearly or, with fallback, runs it on the host), CompileError with NVRTC's
// log, and the check partition_for_cuda shares with the codegen.
#include <gtest/gtest.h>

#include "cudagen_util.h"
#include "partita/codegen/codegen.h"
#include "partita/transform/pass.h"

namespace partita::cudagen_test {
namespace {

std::string codegen_error(const std::string& text) {
  try {
    run_cuda_codegen(script::parse_module(text));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A "Codegen": "cuda" function holding two matrix products, which one kernel cannot compute.
const char* const kTwoMatmuls = R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def two(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        R.func_attr({"Codegen": "cuda"})
        with R.dataflow():
            a = R.matmul(x, x)
            gv = R.matmul(a, x)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = cls.two(x)
            R.output(gv)
        return gv
)";

TEST(CudaCodegenErrors, TwoAnchorsInOneFunction) {
  std::string msg = codegen_error(kTwoMatmuls);
  EXPECT_NE(msg.find("cannot compile function 'two'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("two reductions / matmuls / pools"), std::string::npos) << msg;
}

TEST(CudaCodegenErrors, EpilogueThatIsNotElementwise) {
  std::string msg = codegen_error(R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def f(x: R.Tensor((4, 6), dtype="float32")) -> R.Tensor((6,), dtype="float32"):
        R.func_attr({"Codegen": "cuda"})
        with R.dataflow():
            a = R.sum(x, axis=[1])
            gv = R.strided_slice(x, (0,), (0,), (1,))
            b = R.reshape(gv, R.shape([6]))
            R.output(b)
        return b

    @R.function
    def main(x: R.Tensor((4, 6), dtype="float32")) -> R.Tensor((6,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = cls.f(x)
            R.output(gv)
        return gv
)");
  EXPECT_NE(msg.find("is not computed from"), std::string::npos) << msg;
  msg = codegen_error(R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def f(x: R.Tensor((4, 6), dtype="float32"), w: R.Tensor((6, 6), dtype="float32")) -> R.Tensor((6, 4), dtype="float32"):
        R.func_attr({"Codegen": "cuda"})
        with R.dataflow():
            a = R.matmul(x, w)
            gv = R.permute_dims(a, axes=[1, 0])
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4, 6), dtype="float32"), w: R.Tensor((6, 6), dtype="float32")) -> R.Tensor((6, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = cls.f(x, w)
            R.output(gv)
        return gv
)");
  EXPECT_NE(msg.find("follows 'a' (relax.matmul) but is not elementwise"), std::string::npos) << msg;
}

TEST(CudaCodegenErrors, UnsupportedOperatorNamesTheOpAndTheReason) {
  std::string msg = codegen_error(R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def f(x: R.Tensor((2, 3, 4, 4), dtype="float32"), g: R.Tensor((3,), dtype="float32")) -> R.Tensor((2, 3, 4, 4), dtype="float32"):
        R.func_attr({"Codegen": "cuda"})
        with R.dataflow():
            bn = R.nn.batch_norm(x, g, g, g, g, axis=1, training=True)
            gv = bn[0]
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((2, 3, 4, 4), dtype="float32"), g: R.Tensor((3,), dtype="float32")) -> R.Tensor((2, 3, 4, 4), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = cls.f(x, g)
            R.output(gv)
        return gv
)");
  EXPECT_NE(msg.find("relax.nn.batch_norm: batch_norm in training mode is not supported"), std::string::npos) << msg;
}

TEST(CudaCodegenErrors, UnknownShapesAndDtypes) {
  std::string msg = codegen_error(R"(
@I.ir_module
class Module:
    @R.function(private=True)
    def f(x: R.Tensor(ndim=2, dtype="float32")) -> R.Tensor(ndim=2, dtype="float32"):
        R.func_attr({"Codegen": "cuda"})
        with R.dataflow():
            gv = R.exp(x)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")) -> R.Tensor(ndim=2, dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = cls.f(x)
            R.output(gv)
        return gv
)");
  EXPECT_NE(msg.find("parameter 'x' is not a tensor of known shape and dtype"), std::string::npos) << msg;
}

TEST(CudaCodegenErrors, PartitioningNeverHandsTheCodegenWhatItRefuses) {
  // Training batch_norm stays on the host; the elementwise op after it is compiled.
  IRModule p = backend::cuda::partition_for_cuda(script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 4, 4), dtype="float32"), g: R.Tensor((3,), dtype="float32")) -> R.Tensor((2, 3, 4, 4), dtype="float32"):
        with R.dataflow():
            bn = R.nn.batch_norm(x, g, g, g, g, axis=1, training=True)
            a = bn[0]
            gv = R.exp(a)
            R.output(gv)
        return gv
)"));
  EXPECT_EQ(ops_left_on_host(p), std::vector<std::string>{"relax.nn.batch_norm"});
  EXPECT_NO_THROW(run_cuda_codegen(p));
}

TEST(CudaCodegenErrors, FallbackRunsARefusedFunctionOnTheHost) {
  IRModule mod = script::parse_module(kTwoMatmuls);
  std::string warning;
  codegen::RunCodegenOptions options;
  options.targets = {cuda_target()};
  options.fallback = true;
  options.warn = [&](const std::string& m) { warning = m; };
  IRModule out = codegen::run_codegen(mod, options);
  EXPECT_NE(warning.find("'two'"), std::string::npos) << warning;
  Tensor x = random_input({4, 4}, DataType::Float(32), 3);
  IRModule plain = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            a = R.matmul(x, x)
            gv = R.matmul(a, x)
            R.output(gv)
        return gv
)");
  EXPECT_TRUE(close(run_host(out, {x})[0], run_host(plain, {x})[0], 1e-6, 1e-6));
}

TEST(CudaCodegenErrors, NvrtcErrorsCarryTheLog) {
  try {
    backend::cuda::compile_cubin("extern \"C\" __global__ void k() { undefined_thing(); }",
                                 codegen::Target("cuda", {{"cache_dir", "none"}}));
    FAIL() << "garbage compiled";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("CompileError"), std::string::npos) << msg;
    EXPECT_NE(msg.find("undefined_thing"), std::string::npos) << msg;
  }
  // The errors come first, ahead of a log of warnings longer than the message keeps.
  std::string noisy = "extern \"C\" __global__ void k() {\n";
  for (int i = 0; i < 200; ++i) noisy += "  int unused" + std::to_string(i) + " = 0;\n";
  noisy += "  undefined_thing();\n}\n";
  try {
    backend::cuda::compile_cubin(noisy, codegen::Target("cuda", {{"cache_dir", "none"}}));
    FAIL() << "garbage compiled";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("undefined_thing"), std::string::npos) << msg;
    EXPECT_LT(msg.find("undefined_thing"), msg.find("unused0")) << msg;
  }
  // A virtual architecture gives PTX, not a cubin: refused with a message naming the fix.
  try {
    backend::cuda::compile_cubin("extern \"C\" __global__ void k() {}",
                                 codegen::Target("cuda", {{"cache_dir", "none"}, {"arch", "compute_90"}}));
    FAIL() << "a virtual architecture was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("real GPU"), std::string::npos) << e.what();
  }
}

TEST(CudaCodegenErrors, TargetOptionsAreChecked) {
  EXPECT_THROW(codegen::Target("cuda", {{"arch", 90}}), Error);
  EXPECT_THROW(codegen::Target("cuda", {{"no_such_option", "x"}}), Error);
  EXPECT_EQ(codegen::Target("cuda").get_string("arch"), "sm_90");
}

}  // namespace
}  // namespace partita::cudagen_test
