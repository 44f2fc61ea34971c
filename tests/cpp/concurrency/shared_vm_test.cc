// One VM shared by N threads: calls are serialized (runtime/vm.h), so results equal those of
// one thread and no two calls ever run at once (a probe kernel counts overlapping calls).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>

#include "partita/codegen/build.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "threads.h"

using namespace partita;
using namespace partita::runtime;
using partita::testing::kThreads;
using partita::testing::run_together;

namespace {

std::atomic<int> g_active{0};
std::atomic<int> g_overlaps{0};

/// out = in + 1, slowly, noting when another call is inside at the same time.
void overlap_probe(std::span<const Tensor> in, const KernelAttrs&, std::span<Tensor> out) {
  if (g_active.fetch_add(1) != 0) g_overlaps.fetch_add(1);
  std::this_thread::sleep_for(std::chrono::microseconds(300));
  for (int64_t i = 0; i < in[0].numel(); ++i) out[0].data_as<float>()[i] = in[0].data_as<float>()[i] + 1;
  g_active.fetch_sub(1);
}

/// main(x: (4,)) = relax.add(probe(x), probe(x)) on hand-written bytecode.
std::shared_ptr<Executable> probe_executable() {
  register_kernel("test.overlap_probe", overlap_probe);
  auto ex = std::make_shared<Executable>();
  ex->kernel_names = {"test.overlap_probe", "relax.add"};
  TensorSpec spec{DataType::Float(32), true, {4}, {}, {}};
  auto call = [&](int32_t kernel, std::vector<int32_t> args, int32_t dst) {
    Instruction in;
    in.op = Opcode::CallKernel;
    in.index = kernel;
    in.args = std::move(args);
    in.dst = dst;
    in.outs = {spec};
    return in;
  };
  Instruction ret;
  ret.op = Opcode::Ret;
  ret.args = {2};
  VMFunction f;
  f.name = "main";
  f.param_names = {"x"};
  f.num_registers = 3;
  f.code = {call(0, {0}, 1), call(1, {1, 1}, 2), ret};
  ex->functions.push_back(std::move(f));
  return ex;
}

Tensor filled(std::vector<int64_t> shape, int seed) {
  Tensor t = Tensor::empty(std::move(shape), DataType::Float(32));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = float((i * 5 + seed * 11) % 19 - 9) / 4.f;
  return t;
}

}  // namespace

TEST(ConcurrencyVM, CallsOnASharedVMRunOneAtATime) {
  VirtualMachine vm(probe_executable());
  constexpr int kCalls = 10;
  auto errors = run_together(kThreads, [&](int t) {
    for (int c = 0; c < kCalls; ++c) {
      Tensor x = filled({4}, t * 100 + c);
      Tensor out = vm.invoke("main", {x})[0];
      for (int64_t i = 0; i < 4; ++i)
        if (out.data_as<float>()[i] != 2 * (x.data_as<float>()[i] + 1)) throw Error("WrongAnswer", "element " + std::to_string(i));
    }
  });
  ASSERT_TRUE(errors.empty()) << errors[0];
  EXPECT_EQ(g_overlaps.load(), 0) << "calls of one VM ran at the same time";
  // The probe does see overlaps when each thread has its own VM: the check can fail.
  errors = run_together(kThreads, [&](int t) {
    VirtualMachine own(probe_executable());
    for (int c = 0; c < kCalls; ++c) own.invoke("main", {filled({4}, t)});
  });
  ASSERT_TRUE(errors.empty()) << errors[0];
  EXPECT_GT(g_overlaps.load(), 0) << "separate VMs never overlapped: the probe cannot see overlaps";
}

TEST(ConcurrencyVM, SharedVMMatchesOneThread) {
  auto ex = codegen::build(script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"), w: R.Tensor((8, 8), dtype="float32")) -> R.Tensor(("n", 8), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            m: R.Tensor((n, 8), dtype="float32") = R.matmul(x, w, out_dtype="void")
            r: R.Tensor((n, 8), dtype="float32") = R.nn.relu(m)
            s: R.Tensor((n, 8), dtype="float32") = R.nn.softmax(r, axis=-1)
            R.output(s)
        return s
)"));
  constexpr int kCalls = 8;
  auto inputs = [](int t, int c) { return std::vector<Tensor>{filled({1 + (t + c) % 7, 8}, t * 17 + c), filled({8, 8}, c)}; };
  std::vector<std::vector<Tensor>> want(kThreads), got(kThreads);
  VirtualMachine vm(ex);
  for (int t = 0; t < kThreads; ++t)
    for (int c = 0; c < kCalls; ++c) want[size_t(t)].push_back(vm.invoke("main", inputs(t, c))[0].copy());
  auto errors = run_together(kThreads, [&](int t) {
    for (int c = 0; c < kCalls; ++c) got[size_t(t)].push_back(vm.invoke("main", inputs(t, c))[0].copy());
  });
  ASSERT_TRUE(errors.empty()) << errors[0];
  for (int t = 0; t < kThreads; ++t)
    for (int c = 0; c < kCalls; ++c) {
      const Tensor &a = got[size_t(t)][size_t(c)], &b = want[size_t(t)][size_t(c)];
      ASSERT_EQ(a.shape(), b.shape());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0) << "thread " << t << " call " << c;
    }
}
