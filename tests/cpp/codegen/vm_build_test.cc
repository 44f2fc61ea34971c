// The VM on parsed modules: MLP, conv-relu-pool, tuples, If, symbolic batch dims, function
// calls, external modules; artifact round trip and corruption; buffer reuse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "../random_tensor.h"
#include "partita/codegen/vm_lowering.h"
#include "partita/ir/block_builder.h"
#include "partita/op/ops.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;
using partita::script::parse_module;

namespace {

using partita::testing::random_tensor;

std::shared_ptr<Executable> build(const char* text, std::vector<ModulePtr> mods = {}) {
  return codegen::build_vm_executable(parse_module(text), std::move(mods));
}

const char* kMlp = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"), w1: R.Tensor((8, 16), dtype="float32"), w2: R.Tensor((16, 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            a: R.Tensor((n, 16), dtype="float32") = R.matmul(x, w1, out_dtype="void")
            b: R.Tensor((n, 16), dtype="float32") = R.nn.relu(a)
            c: R.Tensor((n, 4), dtype="float32") = R.matmul(b, w2, out_dtype="void")
            R.output(c)
        return c
)";

void ref_mlp(const Tensor& x, const Tensor& w1, const Tensor& w2, std::vector<float>& out) {
  int64_t n = x.shape()[0];
  std::vector<float> h(size_t(n * 16));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < 16; ++j) {
      float s = 0;
      for (int64_t k = 0; k < 8; ++k) s += x.data_as<float>()[i * 8 + k] * w1.data_as<float>()[k * 16 + j];
      h[size_t(i * 16 + j)] = std::max(s, 0.f);
    }
  out.assign(size_t(n * 4), 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 16; ++k) out[size_t(i * 4 + j)] += h[size_t(i * 16 + k)] * w2.data_as<float>()[k * 4 + j];
}

}  // namespace

TEST(VMBuild, MlpWithSymbolicBatch) {
  auto ex = build(kMlp);
  VirtualMachine vm(ex);
  Tensor w1 = random_tensor({8, 16}, 1), w2 = random_tensor({16, 4}, 2);
  for (int64_t n : {1, 3, 7}) {
    Tensor x = random_tensor({n, 8}, uint32_t(10 + n));
    auto out = vm.invoke("main", {x, w1, w2});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{n, 4}));
    std::vector<float> want;
    ref_mlp(x, w1, w2, want);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[0].data_as<float>()[i], want[i], 1e-4);
  }
}

TEST(VMBuild, InputChecksNameTheParameter) {
  VirtualMachine vm(build(kMlp));
  Tensor w1 = random_tensor({8, 16}, 1), w2 = random_tensor({16, 4}, 2);
  try {
    vm.invoke("main", {random_tensor({2, 9}, 3), w1, w2});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  try {
    vm.invoke("main", {random_tensor({2, 8}, 3), random_tensor({8}, 1), w2});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'w1'"), std::string::npos) << e.what();
  }
  Tensor xi = Tensor::empty({2, 8}, DataType::Int(32));
  EXPECT_THROW(vm.invoke("main", {xi, w1, w2}), Error);
  EXPECT_THROW(vm.invoke("main", {w1, w2}), Error);
  EXPECT_THROW(vm.invoke("nope", {}), Error);
}

TEST(VMBuild, ConvReluPoolAndTuples) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 6, 6), dtype="float32"), w: R.Tensor((3, 2, 3, 3), dtype="float32")):
        with R.dataflow():
            c: R.Tensor((1, 3, 6, 6), dtype="float32") = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="void")
            r: R.Tensor((1, 3, 6, 6), dtype="float32") = R.nn.relu(c)
            p: R.Tensor((1, 3, 3, 3), dtype="float32") = R.nn.max_pool2d(r, pool_size=[2, 2], strides=[2, 2], dilation=[1, 1], padding=[0, 0, 0, 0], ceil_mode=False, count_include_pad=False, layout="NCHW", out_layout="NCHW")
            t: R.Tuple(R.Tensor((1, 3, 3, 3), dtype="float32"), R.Tensor((1, 3, 6, 6), dtype="float32")) = (p, r)
            g: R.Tensor((1, 3, 3, 3), dtype="float32") = t[0]
            R.output(g, t)
        return (g, t)
)";
  VirtualMachine vm(build(text));
  Tensor x = random_tensor({1, 2, 6, 6}, 5), w = random_tensor({3, 2, 3, 3}, 6);
  Value v = vm.invoke_value("main", {Value(x), Value(w)});
  ASSERT_TRUE(v.is_tuple());
  ASSERT_EQ(v.tuple->size(), 2u);
  const Tensor& p = (*v.tuple)[0].tensor;
  // reference conv + relu + pool
  const float* px = x.data_as<float>();
  const float* pw = w.data_as<float>();
  for (int o = 0; o < 3; ++o)
    for (int ph = 0; ph < 3; ++ph)
      for (int pw_ = 0; pw_ < 3; ++pw_) {
        float best = -1e30f;
        for (int dh = 0; dh < 2; ++dh)
          for (int dw = 0; dw < 2; ++dw) {
            int oh = ph * 2 + dh, ow = pw_ * 2 + dw;
            float s = 0;
            for (int c = 0; c < 2; ++c)
              for (int kh = 0; kh < 3; ++kh)
                for (int kw = 0; kw < 3; ++kw) {
                  int ih = oh + kh - 1, iw = ow + kw - 1;
                  if (ih < 0 || ih >= 6 || iw < 0 || iw >= 6) continue;
                  s += px[(c * 6 + ih) * 6 + iw] * pw[((o * 2 + c) * 3 + kh) * 3 + kw];
                }
            best = std::max(best, std::max(s, 0.f));
          }
        EXPECT_NEAR(p.data_as<float>()[(o * 3 + ph) * 3 + pw_], best, 1e-4);
      }
  auto flat = vm.invoke("main", {x, w});
  EXPECT_EQ(flat.size(), 3u);
}

TEST(VMBuild, IfAndFunctionCalls) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def square(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        y: R.Tensor((4,), dtype="float32") = R.multiply(x, x)
        return y

    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        if c:
            y: R.Tensor((4,), dtype="float32") = R.add(x, x)
            r: R.Tensor((4,), dtype="float32") = y
        else:
            r: R.Tensor((4,), dtype="float32") = Module.square(x)
        return r
)";
  VirtualMachine vm(build(text));
  Tensor x = random_tensor({4}, 7);
  Tensor t = Tensor::empty({}, DataType::Bool()), f = Tensor::empty({}, DataType::Bool());
  *t.data_as<uint8_t>() = 1;
  *f.data_as<uint8_t>() = 0;
  auto a = vm.invoke("main", {t, x});
  auto b = vm.invoke("main", {f, x});
  for (int i = 0; i < 4; ++i) {
    float v = x.data_as<float>()[i];
    EXPECT_FLOAT_EQ(a[0].data_as<float>()[i], v + v);
    EXPECT_FLOAT_EQ(b[0].data_as<float>()[i], v * v);
  }
}


TEST(VMBuild, ChainReusesBuffers) {
  // A chain of 40 element-wise ops: after the first call no fresh buffers except the result.
  std::string text = "\n@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((256,), dtype=\"float32\")) -> R.Tensor((256,), dtype=\"float32\"):\n        with R.dataflow():\n            v0: R.Tensor((256,), dtype=\"float32\") = R.add(x, x)\n";
  for (int i = 1; i < 40; ++i)
    text += "            v" + std::to_string(i) + ": R.Tensor((256,), dtype=\"float32\") = R.multiply(v" +
            std::to_string(i - 1) + ", x)\n";
  text += "            R.output(v39)\n        return v39\n";
  VirtualMachine vm(build(text.c_str()));
  Tensor x = random_tensor({256}, 9);
  vm.invoke("main", {x});
  int64_t first = vm.memory_stats().allocations;
  EXPECT_LE(first, 3) << "a chain needs only two live intermediates plus the result";
  for (int k = 0; k < 5; ++k) vm.invoke("main", {x});
  EXPECT_LE(vm.memory_stats().allocations - first, 5) << "later calls allocate only their result";
  // Peak live memory is bounded, so values stay right.
  auto out = vm.invoke("main", {x});
  float v = x.data_as<float>()[3];
  float want = v + v;
  for (int i = 1; i < 40; ++i) want *= v;
  EXPECT_NEAR(out[0].data_as<float>()[3], want, 1e-3 * std::abs(want) + 1e-6);
}

// permute_dims that moves only axes of extent 1 is lowered to a view (no kernel, no copy);
// one that reorders real axes stays a kernel. Both give the permuted values.
TEST(VMBuild, UnitAxisPermuteIsAView) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 4), dtype="float32")) -> R.Tuple(R.Tensor((3, 1, 4), dtype="float32"), R.Tensor((4, 1, 3), dtype="float32")):
        with R.dataflow():
            a: R.Tensor((3, 1, 4), dtype="float32") = R.permute_dims(x, axes=[1, 0, 2])
            b: R.Tensor((3, 4, 1), dtype="float32") = R.permute_dims(a, axes=[0, 2, 1])
            c: R.Tensor((4, 1, 3), dtype="float32") = R.permute_dims(b, axes=[1, 2, 0])
            R.output(a, c)
        return (a, c)
)";
  auto ex = build(text);
  EXPECT_EQ(ex->kernel_names, std::vector<std::string>{"relax.permute_dims"}) << "only c moves data";
  VirtualMachine vm(ex);
  Tensor x = random_tensor({1, 3, 4}, 12);
  auto out = vm.invoke("main", {x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 1, 4}));
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{4, 1, 3}));
  const float* in = x.data_as<float>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out[0].data_as<float>()[i], in[i]);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out[1].data_as<float>()[j * 3 + i], in[i * 4 + j]);
}

// A unit-stride strided_slice that keeps one contiguous run of its input (channels of an NCHW
// tensor of batch 1, a batch row) is lowered to a view at a byte offset, when that offset keeps
// 64-byte alignment; other slices stay kernels. Every result holds the sliced values.
TEST(VMBuild, ContiguousSliceIsAViewAtAnOffset) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 8, 4, 4), dtype="float32"), y: R.Tensor((2, 8, 16), dtype="float32"), z: R.Tensor((1, 6, 3), dtype="float32")):
        with R.dataflow():
            a: R.Tensor((1, 4, 4, 4), dtype="float32") = R.strided_slice(x, axes=[1], begin=[2], end=[6])
            b: R.Tensor((1, 3, 4, 4), dtype="float32") = R.strided_slice(x, axes=[1], begin=[0], end=[3], strides=[1])
            c: R.Tensor((1, 8, 2, 4), dtype="float32") = R.strided_slice(x, axes=[2], begin=[1], end=[3])
            d: R.Tensor((1, 8, 16), dtype="float32") = R.strided_slice(y, axes=[0], begin=[-1], end=[2])
            e: R.Tensor((1, 5, 3), dtype="float32") = R.strided_slice(z, axes=[1], begin=[1], end=[6])
            f: R.Tensor((1, 2, 4, 4), dtype="float32") = R.strided_slice(x, axes=[1], begin=[2], end=[6], strides=[2])
            R.output(a, b, c, d, e, f)
        return (a, b, c, d, e, f)
)";
  auto ex = build(text);
  std::vector<int32_t> offsets;
  for (const Instruction& in : ex->functions.at(0).code)
    if (in.op == Opcode::View) offsets.push_back(in.index);
  EXPECT_EQ(offsets, (std::vector<int32_t>{2 * 16 * 4, 0, 8 * 16 * 4}))
      << "a, b and d are views; c (rows of every channel), e (12 bytes in) and f (stride 2) copy";
  VirtualMachine vm(ex);
  Tensor x = random_tensor({1, 8, 4, 4}, 21), y = random_tensor({2, 8, 16}, 22), z = random_tensor({1, 6, 3}, 23);
  auto out = vm.invoke("main", {x, y, z});
  ASSERT_EQ(out.size(), 6u);
  const float* px = x.data_as<float>();
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[0].data_as<float>()[i], px[32 + i]);
  for (int i = 0; i < 48; ++i) EXPECT_EQ(out[1].data_as<float>()[i], px[i]);
  for (int ch = 0; ch < 8; ++ch)
    for (int i = 0; i < 8; ++i) EXPECT_EQ(out[2].data_as<float>()[ch * 8 + i], px[ch * 16 + 4 + i]);
  for (int i = 0; i < 128; ++i) EXPECT_EQ(out[3].data_as<float>()[i], y.data_as<float>()[128 + i]);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(out[4].data_as<float>()[i], z.data_as<float>()[3 + i]);
  for (int ch = 0; ch < 2; ++ch)
    for (int i = 0; i < 16; ++i) EXPECT_EQ(out[5].data_as<float>()[ch * 16 + i], px[(2 + 2 * ch) * 16 + i]);
}

// The VM's buffer pool takes a buffer back whole, through whichever view of it is released last:
// repeated calls whose intermediates are sliced into views keep the pool and the allocations flat
// (it once pooled the view's bytes, so every call left its buffer behind under a smaller size).
TEST(VMBuild, SlicedIntermediatesDoNotGrowThePool) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 32, 16), dtype="float32")) -> R.Tensor((1, 32, 16), dtype="float32"):
        with R.dataflow():
            t: R.Tensor((1, 32, 16), dtype="float32") = R.add(x, x)
            lo: R.Tensor((1, 16, 16), dtype="float32") = R.strided_slice(t, axes=[1], begin=[0], end=[16])
            hi: R.Tensor((1, 16, 16), dtype="float32") = R.strided_slice(t, axes=[1], begin=[16], end=[32])
            p: R.Tensor((1, 16, 16), dtype="float32") = R.multiply(lo, hi)
            q: R.Tensor((1, 16, 16), dtype="float32") = R.add(lo, hi)
            s: R.Tensor((1, 32, 16), dtype="float32") = R.concat((p, q), axis=1)
            R.output(s)
        return s
)";
  VirtualMachine vm(build(text));
  Tensor x = random_tensor({1, 32, 16}, 5);
  for (int k = 0; k < 3; ++k) vm.invoke("main", {x});
  MemoryStats warm = vm.memory_stats();
  Tensor out;
  for (int k = 0; k < 20; ++k) out = vm.invoke("main", {x})[0];
  EXPECT_EQ(vm.memory_stats().pool_bytes, warm.pool_bytes);
  EXPECT_LE(vm.memory_stats().allocations - warm.allocations, 20) << "only the result is new";
  const float* px = x.data_as<float>();
  for (int i = 0; i < 256; ++i) {
    EXPECT_FLOAT_EQ(out.data_as<float>()[i], (2 * px[i]) * (2 * px[256 + i]));
    EXPECT_FLOAT_EQ(out.data_as<float>()[256 + i], 2 * px[i] + 2 * px[256 + i]);
  }
}

TEST(VMBuild, ExternalFunctionsAndNamedConstants) {
  // main(x, y) = ext_mul(x, y) + named constant-free 1.0, built by hand (a call of an ExternFunc).
  StructInfo s23 = tensor_sinfo(std::vector<int64_t>{2, 3}, DataType::Float(32));
  Var x = make<VarNode>("x", s23), y = make<VarNode>("y", s23);
  BlockBuilder bb;
  bb.begin_function("main", {x, y});
  Var a = bb.emit(make<CallNode>(make<ExternFuncNode>("ext_mul"), std::vector<Expr>{x, y}, Attrs(),
                                 std::vector<StructInfo>{s23}));
  Tensor one = Tensor::empty({}, DataType::Float(32));
  *one.data_as<float>() = 1.0f;
  Var b = bb.emit(op::add(a, make<ConstantNode>(one)));
  bb.emit_func_output(b);
  IRModule mod = bb.get();
  auto mod_fn = make_function_module("test_ext", {{"ext_mul", [](std::span<const Tensor> in, std::span<Tensor> out) {
                                                     for (int64_t i = 0; i < out[0].numel(); ++i)
                                                       out[0].data_as<float>()[i] =
                                                           in[0].data_as<float>()[i] * in[1].data_as<float>()[i];
                                                   }}});
  auto ex = codegen::build_vm_executable(mod, {mod_fn});
  VirtualMachine vm(ex);
  Tensor tx = random_tensor({2, 3}, 1), ty = random_tensor({2, 3}, 2);
  auto out = vm.invoke("main", {tx, ty});
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], tx.data_as<float>()[i] * ty.data_as<float>()[i] + 1.0f);
  auto ex2 = codegen::build_vm_executable(mod, {});
  EXPECT_THROW(VirtualMachine{ex2}, Error);
}

TEST(VMBuild, SaveLoadRoundTripAndExport) {
  auto ex = build(kMlp);
  ex->named_constants["w"] = ex->add_constant(random_tensor({8, 16}, 1));
  std::string bytes;
  ex->save(bytes);
  auto back = Executable::load(bytes);
  std::string again;
  back->save(again);
  EXPECT_EQ(bytes, again);
  EXPECT_EQ(back->named_constants.size(), 1u);
  Tensor w1 = random_tensor({8, 16}, 1), w2 = random_tensor({16, 4}, 2), x = random_tensor({5, 8}, 3);
  auto a = VirtualMachine(ex).invoke("main", {x, w1, w2});
  auto path = (std::filesystem::temp_directory_path() / "partita_vm_test.ptx").string();
  ex->export_library(path);
  auto loaded = load_module(path);
  auto b = VirtualMachine(loaded).invoke("main", {x, w1, w2});
  EXPECT_TRUE(a[0].content_equal(b[0]));
  std::filesystem::remove(path);
  EXPECT_THROW(load_module(path), Error);
  // The same weight twice is stored once.
  size_t before = ex->constants.size();
  ex->add_constant(random_tensor({8, 16}, 1));
  EXPECT_EQ(ex->constants.size(), before);
}

TEST(VMBuild, CorruptedArtifactsGiveCleanErrors) {
  auto ex = build(kMlp);
  ex->add_constant(random_tensor({4, 4}, 3));
  std::string bytes;
  ex->save(bytes);
  for (int k = 0; k < 16; ++k) {
    std::string cut = bytes.substr(0, bytes.size() * size_t(k) / 16);
    try {
      Executable::load(cut);
      FAIL() << "truncated at " << cut.size();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), "ValueError");
    }
  }
  std::mt19937 rng(42);
  for (int k = 0; k < 200; ++k) {
    std::string bad = bytes;
    size_t at = rng() % bad.size();
    bad[at] = char(bad[at] ^ (1 + rng() % 255));
    try {
      Executable::load(bad);
      FAIL() << "flip at " << at;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), "ValueError");
    }
  }
}

TEST(VMBuild, ProfileTimesEveryKernelCall) {
  VirtualMachine vm(build(kMlp));
  Tensor x = random_tensor({5, 8}, 1), w1 = random_tensor({8, 16}, 2), w2 = random_tensor({16, 4}, 3);
  ProfileReport report = vm.profile("main", {x, w1, w2});
  ASSERT_EQ(report.entries.size(), 2u);  // relax.matmul (2 calls) and relax.nn.relu (1 call)
  std::map<std::string, int64_t> calls;
  double in_calls = 0;
  for (const auto& e : report.entries) {
    calls[e.name] = e.calls;
    EXPECT_FALSE(e.external);
    EXPECT_GT(e.total_us, 0) << e.name << ": the call was not timed";  // no kernel runs in 0 ns
    in_calls += e.total_us;
  }
  EXPECT_EQ(calls, (std::map<std::string, int64_t>{{"relax.matmul", 2}, {"relax.nn.relu", 1}}));
  EXPECT_LE(in_calls, report.wall_us);
  EXPECT_GE(report.entries[0].total_us, report.entries[1].total_us);  // most expensive first
  EXPECT_NE(report.table().find("relax.nn.relu"), std::string::npos);
  // Profiling is off again afterwards, and a failing call leaves it off too.
  EXPECT_THROW(vm.profile("main", {x}), Error);
  EXPECT_EQ(vm.invoke("main", {x, w1, w2})[0].shape(), (std::vector<int64_t>{5, 4}));
  EXPECT_THROW(vm.profile("nope", {}), Error);
}
