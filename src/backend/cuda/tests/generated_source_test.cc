// The generated CUDA on the CPU: every operator case compiles with NVRTC for every dtype it
// accepts (odd and symbolic shapes included), partitioning leaves nothing on the host, and the
// source has the shape the design promises (one kernel per fused function, 32-bit indices for
// small static shapes, symbolic dims as arguments, scalars as literals, constants by name).
#include <gtest/gtest.h>

#include "cudagen_util.h"
#include "op_cases.h"
#include <algorithm>
#include <regex>
#include <set>

#include "partita/codegen/codegen.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"

namespace partita::cudagen_test {
namespace {

// The case's module with main renamed to `name` (so that many cases share one module).
Function renamed_main(const IRModule& mod, const std::string& name) {
  auto fn = mod.lookup("main").as_ref<FunctionNode>();
  auto* copy = copy_node(fn);
  copy->attrs["global_symbol"] = name;
  return Function(copy);
}

std::string only_source(const IRModule& mod) {
  auto mods = codegen::external_mods_of(mod);
  EXPECT_EQ(mods.size(), 1u);
  return mods.empty() ? "" : mods[0]->get_source();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every case of a dtype in one module: one NVRTC compile per dtype.
TEST(CudaGeneratedSource, EveryOpCompilesForEveryDtype) {
  std::set<std::string> dtypes;
  for (const auto& c : op_cases()) dtypes.insert(c.dtypes.begin(), c.dtypes.end());
  for (const std::string& dt : dtypes) {
    SCOPED_TRACE("dtype " + dt);
    IRModule all = IRModule::create();
    std::vector<std::string> names;
    for (const auto& c : op_cases()) {
      if (std::find(c.dtypes.begin(), c.dtypes.end(), dt) == c.dtypes.end()) continue;
      IRModule m = script::parse_module(case_text(c, dt));
      std::string name = "case_" + c.name;
      all.add(make<GlobalVarNode>(name), renamed_main(m, name));
      names.push_back(name);
    }
    IRModule parted = backend::cuda::partition_for_cuda(all);
    for (const auto& name : names) {
      IRModule one = IRModule::create();
      one.add(make<GlobalVarNode>("main"), parted.lookup(name));
      EXPECT_EQ(ops_left_on_host(one), std::vector<std::string>{}) << name;
    }
    IRModule compiled = run_cuda_codegen(parted);
    auto mods = codegen::external_mods_of(compiled);
    ASSERT_EQ(mods.size(), 1u);
    EXPECT_FALSE(mods[0]->get_source("cubin").empty());
    int fused = 0;
    for (const auto& [gv, f] : parted.functions())
      if (auto* fn = f.as<FunctionNode>(); fn && fn->attr_string("Codegen") == "cuda") ++fused;
    EXPECT_EQ(int(mods[0]->function_names().size()), fused);
    // One kernel per function, and a 16-byte-access variant of some elementwise ones.
    std::string src = mods[0]->get_source();
    EXPECT_EQ(int(count(src, "extern \"C\" __global__")), fused + int(count(src, "_vec(")));
  }
}

// The GPU suite's references: each case's host model runs (with the layouts the host handles).
TEST(CudaGeneratedSource, EveryCaseHasAHostReference) {
  for (const auto& c : op_cases())
    for (const auto& dt : c.dtypes) {
      SCOPED_TRACE(c.name + " " + dt);
      IRModule ref = script::parse_module(case_text(c, reference_dtype(dt), true));
      CaseInputs in = case_inputs(c, script::parse_module(case_text(c, dt)), ref);
      std::vector<Tensor> out;
      EXPECT_NO_THROW(out = run_host(ref, in.reference));
      EXPECT_FALSE(out.empty());
    }
}

IRModule compile_text(const std::string& text, codegen::TargetOptionMap options = {}) {
  return run_cuda_codegen(backend::cuda::partition_for_cuda(script::parse_module(text)), std::move(options));
}

TEST(CudaGeneratedSource, MatmulBiasReluIsOneKernelWithStaticIndices) {
  IRModule out = compile_text(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 16), dtype="float16"), w: R.Tensor((16, 4), dtype="float16"), b: R.Tensor((4,), dtype="float16")):
        with R.dataflow():
            lv = R.matmul(x, w)
            lv1 = R.add(lv, b)
            gv = R.nn.relu(lv1)
            R.output(gv)
        return gv
)");
  std::string src = only_source(out);
  EXPECT_EQ(count(src, "extern \"C\" __global__"), 1u);
  EXPECT_NE(src.find("typedef pt_i32 pt_idx;"), std::string::npos);
  EXPECT_NE(src.find("const __half* __restrict__ in0"), std::string::npos);
  EXPECT_NE(src.find("__float2half_rn("), std::string::npos);  // rounded once, at the store
  EXPECT_EQ(src.find("const pt_i64 s0"), std::string::npos);
  auto mods = codegen::external_mods_of(out);
  EXPECT_EQ(mods[0]->function_names(), std::vector<std::string>{"fused_relax_matmul_relax_add_relax_nn_relu"});
}

// A direct convolution (few output channels per group) shares the reduction of a pixel among
// threads only when the pixels are too few to fill the GPU and the reduction is long; each thread
// computes all the group's output channels either way. With unit stride along the width, the
// threads sharing a reduction compute runs of four adjacent outputs, eight threads a run (the 3 x
// 4 partial sums of each in shared memory); strided, four threads a pixel.
TEST(CudaGeneratedSource, DirectConvolutionSplitsLongReductionsOfFewPixels) {
  auto source = [](const std::string& x, const std::string& w, const std::string& strides = "[1, 1]") {
    return only_source(compile_text(replace_all(replace_all(replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(XS, dtype="float32"), w: R.Tensor(WS, dtype="float32")):
        with R.dataflow():
            gv = R.nn.conv2d(x, w, strides=ST, padding=[4, 4, 4, 4])
            R.output(gv)
        return gv
)", "XS", x), "WS", w), "ST", strides)));
  };
  // The split kernels' marks: partial sums in shared memory.
  auto split = [](const std::string& src) { return std::regex_search(src, std::regex(R"(\[(4|8)\]\[\d+\]\[64\];)")); };
  const std::string few = source("(1, 32, 56, 56)", "(3, 32, 9, 9)");    // 3,136 pixels, 288 (c, kh)
  EXPECT_NE(few.find("[8][12][64];"), std::string::npos) << few;
  EXPECT_NE(few.find("[12];"), std::string::npos) << few;          // 4 + 9 - 1 inputs of a kernel row
  EXPECT_NE(few.find(" < 288; "), std::string::npos) << few;  // one loop over (channel, kernel row)
  const std::string strided = source("(1, 32, 56, 56)", "(3, 32, 9, 9)", "[1, 2]");
  EXPECT_NE(strided.find("[4][3][64];"), std::string::npos) << strided;
  const std::string many = source("(8, 32, 224, 224)", "(3, 32, 9, 9)");  // 401,408 pixels
  EXPECT_FALSE(split(many)) << many;
  const std::string short_reduction = source("(1, 1, 56, 56)", "(3, 1, 3, 3)");  // 3 (c, kh) < 16
  EXPECT_FALSE(split(short_reduction)) << short_reduction;
}

// A convolution's operand loads evaluate a fused upsampling and reflection pad at every tap: the
// nearest upsampling by an integer factor is a division of the index (no pt_resize_axis and its
// double arithmetic), the reflection is computed in the kernel's index type.
TEST(CudaGeneratedSource, UpsamplingAndReflectionInConvolutionLoadsAreIndexArithmetic) {
  auto source = [](const std::string& size) {
    return only_source(compile_text(replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 32, 28, 28), dtype="float32"), w: R.Tensor((32, 32, 3, 3), dtype="float32")):
        with R.dataflow():
            a = R.image.resize2d(x, R.shape(SIZE), method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor")
            b = R.nn.pad(a, pad_width=[0, 0, 0, 0, 1, 1, 1, 1], pad_mode="reflect")
            gv = R.nn.conv2d(b, w)
            R.output(gv)
        return gv
)", "SIZE", size)));
  };
  const std::regex resize_call(R"(pt_resize_axis\(\d)");  // a call (the prelude defines it)
  // The reflected index of an axis (112 or 140 wide) divided by that axis's factor.
  auto divided = [](int64_t width, int64_t factor) {
    return std::regex("const pt_idx (\\w+) = pt_reflect<pt_idx>\\(\\w+, " + std::to_string(width) +
                      "\\);[\\s\\S]*= \\1 / " + std::to_string(factor) + ";");
  };
  const std::string integer = source("[112, 140]");  // factors 4 and 5
  EXPECT_FALSE(std::regex_search(integer, resize_call)) << integer;
  EXPECT_TRUE(std::regex_search(integer, divided(112, 4))) << integer;
  EXPECT_TRUE(std::regex_search(integer, divided(140, 5))) << integer;
  const std::string fractional = source("[112, 42]");  // 1.5 along the width: pt_resize_axis there
  EXPECT_TRUE(std::regex_search(fractional, resize_call)) << fractional;
  EXPECT_TRUE(std::regex_search(fractional, divided(112, 4))) << fractional;
}

// Where a group's channels are a multiple of the slice depth, a convolution's K runs over the kernel
// taps, the channels within each: the slice's tap is its first index divided by the channels, so
// that every element a thread loads in a slice shares the tap, its input position and the fused
// reflection (the style network's 128-channel layers). A zero-padded convolution selects 0 outside
// the image rather than branching around the load, and with K a multiple of the depth the loads
// have no bound of their own on K. With channels that are not a multiple (24), K runs over the
// channels first, as before.
TEST(CudaGeneratedSource, ConvolutionSlicesLieWithinOneKernelTap) {
  auto source = [](const std::string& channels, const std::string& body) {
    return only_source(compile_text(replace_all(replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, C, 56, 56), dtype="float32"), w: R.Tensor((C, C, 3, 3), dtype="float32")):
        with R.dataflow():
            BODY
            R.output(gv)
        return gv
)", "BODY", body), "C", channels)));
  };
  const std::string reflect = source("128",
      "p = R.nn.pad(x, pad_width=[0, 0, 0, 0, 1, 1, 1, 1], pad_mode=\"reflect\")\n            gv = R.nn.conv2d(p, w)");
  EXPECT_TRUE(std::regex_search(reflect, std::regex(R"(= \(\(pt_idx\)0 \+ grp \* 16\) / 128;)"))) << reflect;
  EXPECT_FALSE(std::regex_search(reflect, std::regex(R"(gr\d+ < 1152)"))) << reflect;  // no element's bound on K
  const std::string zero = source("128", "gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])");
  const std::string kernel = zero.substr(zero.find("__global__"));
  EXPECT_NE(kernel.find("min(max("), std::string::npos) << zero;  // the clamped position
  EXPECT_EQ(kernel.find("if (i"), std::string::npos) << zero;     // no branch on the position
  const std::string odd = source("24", "gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])");
  EXPECT_EQ(odd.find(") / 24;"), std::string::npos) << odd;
  EXPECT_NE(odd.find(" / 9;"), std::string::npos) << odd;
}

// With unit stride along the width, a thread computes a run of adjacent outputs from one window of
// inputs per kernel row (7 taps, 4 outputs: 10 inputs, not 28); a strided convolution does not.
TEST(CudaGeneratedSource, DirectConvolutionComputesRunsOfAdjacentOutputs) {
  auto source = [](const std::string& strides) {
    return only_source(compile_text(replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 8, 20, 20), dtype="float16"), w: R.Tensor((8, 1, 7, 7), dtype="float16")):
        with R.dataflow():
            gv = R.nn.conv2d(x, w, strides=ST, padding=[3, 3, 3, 3], groups=8)
            R.output(gv)
        return gv
)", "ST", strides)));
  };
  const std::string unit = source("[1, 1]");
  EXPECT_NE(unit.find("[10];"), std::string::npos) << unit;   // the window of inputs
  EXPECT_NE(unit.find("[4] = {};"), std::string::npos) << unit;  // four accumulators
  const std::string strided = source("[1, 2]");
  EXPECT_EQ(strided.find("[10];"), std::string::npos) << strided;
}

// 16-bit matrix products run on tensor cores (WMMA) where the arch has them; float32 does not
// (TF32 would lose the accuracy the float32 results promise).
TEST(CudaGeneratedSource, TensorCoresFor16BitMatmulsOnly) {
  auto source = [](const std::string& dt, const std::string& arch) {
    std::string text = replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((40, 24), dtype="DT"), w: R.Tensor((24, 8), dtype="DT")):
        with R.dataflow():
            gv = R.matmul(x, w)
            R.output(gv)
        return gv
)", "DT", dt);
    return only_source(compile_text(text, {{"arch", arch}}));
  };
  EXPECT_NE(source("float16", "sm_90").find("wmma::mma_sync"), std::string::npos);
  EXPECT_NE(source("bfloat16", "sm_90").find("#include <mma.h>"), std::string::npos);
  EXPECT_EQ(source("float32", "sm_90").find("wmma::"), std::string::npos);
  EXPECT_EQ(source("bfloat16", "sm_75").find("wmma::"), std::string::npos);  // bf16 MMA needs sm_80
  EXPECT_NE(source("float16", "sm_75").find("wmma::mma_sync"), std::string::npos);
  EXPECT_THROW(source("float16", "compute_90"), Error);
}

// The tensor-core tile: 64 x 64 where M fits it or the 128 x 128 grid would not fill the GPU
// (132 tiles by default), 128 x 128 otherwise; where even the small grid is thin (split-K), the
// small tile with its warps four times over sharing K when that grid covers half the GPU and K is
// long (unless gemm_mma_split_k=0), FFMA otherwise.
TEST(CudaGeneratedSource, TensorCoreTileFitsTheProblem) {
  auto source = [](const std::string& m, const std::string& k, const std::string& n, int64_t mma_split_k = 1,
                   int64_t mma_thin = 1) {
    return only_source(compile_text(replace_all(replace_all(replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((DM, DK), dtype="float16"), w: R.Tensor((DK, DN), dtype="float16")):
        with R.dataflow():
            gv = R.matmul(x, w)
            R.output(gv)
        return gv
)", "DM", m), "DK", k), "DN", n), {{"gemm_mma_split_k", mma_split_k}, {"gemm_mma_thin", mma_thin}}));
  };
  auto tile = [](const std::string& src) {
    if (src.find("(*)[128][32 + 8]") != std::string::npos) return 128;
    if (src.find("(*)[64][32 + 8]") != std::string::npos) return 64;
    if (src.find("(*)[32][32 + 8]") != std::string::npos) return 32;
    return 0;
  };
  auto groups = [](const std::string& src) {
    return src.find(" += 128)") != std::string::npos ? 4 : 1;  // four 32-deep slices a step
  };
  EXPECT_EQ(tile(source("4096", "512", "4096")), 128);  // 1,024 large tiles
  EXPECT_EQ(tile(source("48", "512", "20000")), 64);    // M fits the small tile (313 of them)
  EXPECT_EQ(tile(source("150", "64", "2100")), 64);     // 34 large tiles, K too short to split
  EXPECT_EQ(groups(source("150", "64", "2100")), 1);
  // 25 large, 98 small tiles (the style network's 128-channel convolutions as products): split-K
  // on the small tensor-core tile.
  const std::string split = source("3136", "1152", "128");
  EXPECT_EQ(tile(split), 64);
  EXPECT_EQ(groups(split), 4);
  // Other thin products: the 32 x 32 tensor-core tile, K shared by four groups of warps (ViT-B/16's
  // batch-1 products, 197 x 768 x 768 to 197 x 3072 x 768, are such products: 2.1 against 3.5 ms
  // for the model on FFMA split-K, docs/benchmarks.md) ...
  EXPECT_EQ(tile(source("3136", "768", "128")), 32);  // a shorter K
  EXPECT_EQ(tile(source("256", "1024", "512")), 32);  // 8 large, 32 small tiles
  EXPECT_EQ(groups(source("256", "1024", "512")), 4);
  EXPECT_EQ(tile(source("197", "768", "3072")), 32);
  // ... or the FFMA split-K kernel when asked (gemm_mma_split_k=0, gemm_mma_thin=0).
  EXPECT_EQ(tile(source("3136", "1152", "128", 0, 0)), 0);
  EXPECT_EQ(tile(source("3136", "768", "128", 1, 0)), 0);
  EXPECT_EQ(tile(source("197", "768", "3072", 1, 0)), 0);
  EXPECT_EQ(tile(source("3136", "1152", "128", 0)), 32);  // no 64 x 64 split-K: the thin tile
}

// Products of at most 32 rows (convolutions to 32 channels or fewer) take 32 x 128 tiles on the
// regular kernels, FFMA and tensor cores, so that no thread or warp works on rows beyond M
// (gemm_wide=0: the square tiles).
TEST(CudaGeneratedSource, ProductsOfFewRowsTakeWideTiles) {
  auto source = [](const std::string& m, const std::string& dtype, int64_t wide) {
    return only_source(compile_text(replace_all(replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((DM, 192), dtype="DT"), w: R.Tensor((192, 50176), dtype="DT")):
        with R.dataflow():
            gv = R.matmul(x, w)
            R.output(gv)
        return gv
)", "DM", m), "DT", dtype), {{"gemm_wide", wide}}));
  };
  EXPECT_NE(source("32", "float32", 1).find("Bs[16][128]"), std::string::npos);
  EXPECT_NE(source("7", "float32", 1).find("Bs[16][128]"), std::string::npos);
  EXPECT_NE(source("32", "float32", 0).find("Bs[16][64]"), std::string::npos);
  EXPECT_NE(source("33", "float32", 1).find("Bs[16][64]"), std::string::npos);
  EXPECT_NE(source("32", "float16", 1).find("(*)[32][128 + 8]"), std::string::npos);
  EXPECT_NE(source("32", "float16", 0).find("(*)[32][64 + 8]"), std::string::npos);
  EXPECT_NE(source("48", "float16", 1).find("(*)[32][64 + 8]"), std::string::npos);
}

// The float-accumulating FFMA kernels (regular and split-K) read each k step's four A and four B
// values from shared memory as one float4 each, their threads holding blocks of adjacent rows and
// columns (gemm_vector_smem=0: strided blocks, scalar reads); float64 keeps the scalar reads.
TEST(CudaGeneratedSource, FfmaKernelsReadSharedMemoryAsFloat4) {
  auto source = [](const std::string& m, const std::string& dtype, int64_t vector) {
    return only_source(compile_text(replace_all(replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((DM, 512), dtype="DT"), w: R.Tensor((512, 512), dtype="DT")):
        with R.dataflow():
            gv = R.matmul(x, w)
            R.output(gv)
        return gv
)", "DM", m), "DT", dtype), {{"gemm_vector_smem", vector}}));
  };
  for (const std::string m : {"8192", "64"}) {  // the regular kernel, the split-K kernel
    EXPECT_NE(source(m, "float32", 1).find("reinterpret_cast<const float4*>"), std::string::npos) << m;
    EXPECT_EQ(source(m, "float32", 0).find("float4"), std::string::npos) << m;
    EXPECT_EQ(source(m, "float64", 1).find("float4"), std::string::npos) << m;
  }
}

// A GEMM kernel whose operands are plain reads (parameters, constants, index remappings)
// fetches the next K slice into registers before computing on the current one (gemm_prefetch=1,
// the default): the fetch sits under "is there a next slice". With gemm_prefetch=0, or when an
// operand carries a fused producer's arithmetic (measured slower: the style network's
// convolutions of normalized inputs, docs/benchmarks.md), each slice is fetched at the top of its
// iteration.
TEST(CudaGeneratedSource, GemmKernelsPrefetchTheNextSliceOfPlainOperands) {
  auto source = [](const std::string& m, const std::string& dtype, int64_t prefetch, const std::string& lhs) {
    return only_source(compile_text(replace_all(replace_all(replace_all(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((DM, 512), dtype="DT"), w: R.Tensor((512, 512), dtype="DT")):
        with R.dataflow():
            a = LHS
            gv = R.matmul(a, w)
            R.output(gv)
        return gv
)", "DM", m), "DT", dtype), "LHS", lhs), {{"gemm_prefetch", prefetch}}));
  };
  const std::regex next(R"(if \(s\d+ \+ \d+ < 512\))");
  // The regular FFMA kernel, the FFMA split-K kernel and the tensor-core kernel.
  for (const auto& [m, dtype] : std::vector<std::pair<std::string, std::string>>{
           {"8192", "float32"}, {"64", "float32"}, {"8192", "float16"}}) {
    const std::string plain = "R.reshape(R.permute_dims(x, axes=[1, 0]), R.shape([" + m + ", 512]))";
    EXPECT_TRUE(std::regex_search(source(m, dtype, 1, "x"), next)) << m << " " << dtype;
    EXPECT_TRUE(std::regex_search(source(m, dtype, 1, plain), next)) << m << " " << dtype;
    EXPECT_FALSE(std::regex_search(source(m, dtype, 1, "R.nn.relu(x)"), next)) << m << " " << dtype;
    EXPECT_FALSE(std::regex_search(source(m, dtype, 0, "x"), next)) << m << " " << dtype;
  }
}

TEST(CudaGeneratedSource, ElementwiseKernelsHaveA16ByteVariant) {
  IRModule out = compile_text(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 64), dtype="float16"), y: R.Tensor((64,), dtype="float16")):
        with R.dataflow():
            lv = R.add(x, y)
            gv = R.nn.gelu(lv)
            R.output(gv)
        return gv
)");
  std::string src = only_source(out);
  // x is read 8 halves at a time; y (broadcast) element by element.
  EXPECT_NE(src.find("_vec("), std::string::npos);
  EXPECT_NE(src.find("*reinterpret_cast<const uint4*>(in0 + base)"), std::string::npos) << src;
  EXPECT_EQ(src.find("reinterpret_cast<const uint4*>(in1"), std::string::npos);
  EXPECT_NE(src.find("*reinterpret_cast<uint4*>(out0 + base)"), std::string::npos);
}

TEST(CudaGeneratedSource, SymbolicDimsAreKernelArgumentsReadFromTheInputs) {
  IRModule out = compile_text(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", "m"), dtype="float32")):
        with R.dataflow():
            lv = R.exp(x)
            gv = R.sum(lv, axis=[1])
            R.output(gv)
        return gv
)");
  std::string src = only_source(out);
  EXPECT_NE(src.find("typedef pt_i64 pt_idx;"), std::string::npos);
  EXPECT_NE(src.find("const pt_i64 s0"), std::string::npos);
  EXPECT_NE(src.find("const pt_i64 s1"), std::string::npos);
  EXPECT_NE(src.find("expf("), std::string::npos);  // the prologue is inside the reduction
  EXPECT_EQ(count(src, "extern \"C\" __global__"), 1u);
}

TEST(CudaGeneratedSource, ScalarConstantsAreLiteralsAndTensorsAreNamedArguments) {
  Tensor w = random_input({6, 3}, DataType::Float(32), 1);
  Tensor one = Tensor::empty({}, DataType::Float(32));
  *one.data_as<float>() = 0.25f;
  BlockBuilder bb;
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4, 6}, DataType::Float(32)));
  bb.begin_function("main", {x});
  bb.begin_dataflow();
  Var a = bb.emit(op::make_call("relax.matmul", {x, make<ConstantNode>(w)}));
  Var c = bb.emit(op::make_call("relax.multiply", {a, make<ConstantNode>(one)}));
  Var gv = bb.emit_output(c);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  IRModule out = run_cuda_codegen(backend::cuda::partition_for_cuda(bb.get()));
  std::string src = only_source(out);
  EXPECT_NE(src.find("0x1p-2f"), std::string::npos);  // 0.25 as an exact literal
  EXPECT_NE(src.find("const float* __restrict__ c0"), std::string::npos);
  auto mods = codegen::external_mods_of(out);
  ASSERT_EQ(mods[0]->const_names().size(), 1u);
  std::string name = mods[0]->const_names()[0];
  ASSERT_TRUE(out->const_name_to_constant.count(name)) << name;
  EXPECT_TRUE(out->const_name_to_constant.at(name).content_equal(w));
}

// build() with Target("cuda") alone fuses and compiles everything: no host kernel is left, only
// the copies of the inputs to the GPU (PlaceDeviceCopies), which the VM skips for inputs
// already there; the result is not copied back to the host (the VM returns it where the user is).
TEST(CudaGeneratedSource, BuildWithTheCudaTargetLeavesNothingOnTheHost) {
  auto exec = build_cuda(script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 16), dtype="float32"), w: R.Tensor((16, 8), dtype="float32")):
        with R.dataflow():
            lv = R.matmul(x, w)
            lv1 = R.nn.relu(lv)
            lv2 = R.reshape(lv1, R.shape([-1]))
            gv = R.nn.softmax(lv2, axis=0)
            R.output(gv)
        return gv
)"));
  EXPECT_EQ(exec->kernel_names, std::vector<std::string>{"relax.to_vdevice"});
  int copies = 0;
  for (const auto& in : exec->functions.at(0).code) copies += in.op == runtime::Opcode::CallKernel;
  EXPECT_EQ(copies, 2);  // x and w
  ASSERT_EQ(exec->external_modules.size(), 1u);
  EXPECT_EQ(exec->external_modules[0]->type_key(), "cuda");
  EXPECT_EQ(exec->external_modules[0]->function_names().size(), 2u);
}

TEST(CudaGeneratedSource, ViewsAloneStayViewsOnTheHost) {
  IRModule p = backend::cuda::partition_for_cuda(script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6), dtype="float32")):
        with R.dataflow():
            lv = R.reshape(x, R.shape([24]))
            gv = R.expand_dims(lv, axis=[0])
            R.output(gv)
        return gv
)"));
  for (const auto& [gv, f] : p.functions()) EXPECT_EQ(gv->name_hint, "main");
}

}  // namespace
}  // namespace partita::cudagen_test
