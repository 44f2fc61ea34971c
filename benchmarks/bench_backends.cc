// Host VM vs every registered backend that has a codegen, measured in one run: a ResNet basic block (batch 1,
// 64 channels, 56x56) and an MLP (batch 64, 3 x 1024). Prints the median time, the ratio to
// the host, and achieved GFLOP/s. Threads: PARTITA_BENCH_THREADS (default 2).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>

#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/ir/block_builder.h"
#include "partita/op/registry.h"
#include "partita/runtime/omp_wait_policy.h"
#include "partita/runtime/vm.h"
#include "partita/transform/pattern_registry.h"

using namespace partita;

namespace {

const DataType F32 = DataType::Float(32);

Tensor random_tensor(std::vector<int64_t> shape, uint32_t seed, float scale) {
  Tensor t = Tensor::empty(std::move(shape), F32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

IRModule module_of(std::vector<Var> params, const std::function<Expr(BlockBuilder&)>& body) {
  BlockBuilder bb;
  bb.begin_function("main", params);
  bb.begin_dataflow();
  Expr r = body(bb);
  Var gv = bb.emit_output(r);
  bb.end_dataflow();
  bb.emit_func_output(gv);
  return bb.get();
}

IRModule resnet_block() {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{1, 64, 56, 56}, F32));
  auto conv = [](Expr in, const Tensor& w) {
    return op::make_call("relax.nn.conv2d", {std::move(in), make<ConstantNode>(w)},
                         {{"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  };
  Tensor w1 = random_tensor({64, 64, 3, 3}, 1, 0.05f), b1 = random_tensor({1, 64, 1, 1}, 2, 0.1f);
  Tensor w2 = random_tensor({64, 64, 3, 3}, 3, 0.05f), b2 = random_tensor({1, 64, 1, 1}, 4, 0.1f);
  return module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Var c1 = bb.emit(conv(x, w1));
    Var a1 = bb.emit(op::make_call("relax.add", {c1, make<ConstantNode>(b1)}));
    Var r1 = bb.emit(op::make_call("relax.nn.relu", {a1}));
    Var c2 = bb.emit(conv(r1, w2));
    Var a2 = bb.emit(op::make_call("relax.add", {c2, make<ConstantNode>(b2)}));
    Var s = bb.emit(op::make_call("relax.add", {a2, x}));
    return bb.emit(op::make_call("relax.nn.relu", {s}));
  });
}

IRModule mlp() {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{64, 1024}, F32));
  return module_of({x}, [&](BlockBuilder& bb) -> Expr {
    Expr h = x;
    for (int l = 0; l < 3; ++l) {
      Tensor w = random_tensor({1024, 1024}, 10 + l, 0.03f), b = random_tensor({1024}, 20 + l, 0.1f);
      Var m = bb.emit(op::make_call("relax.matmul", {h, make<ConstantNode>(w)}));
      Var a = bb.emit(op::make_call("relax.add", {m, make<ConstantNode>(b)}));
      h = l < 2 ? Expr(bb.emit(op::make_call("relax.nn.relu", {a}))) : Expr(a);
    }
    return h;
  });
}

double median_ms(runtime::VirtualMachine& vm, const std::vector<Tensor>& in) {
  vm.invoke("main", in);  // warm-up (dnnl builds its primitives here)
  std::vector<double> t;
  auto start = std::chrono::steady_clock::now();
  while (t.size() < 5 || (t.size() < 50 && std::chrono::steady_clock::now() - start < std::chrono::seconds(2))) {
    auto a = std::chrono::steady_clock::now();
    vm.invoke("main", in);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void run(const char* name, const IRModule& mod, const std::vector<Tensor>& in, double gflop, int threads) {
  std::printf("%s (%.3f GFLOP)\n", name, gflop);
  double host = 0;
  struct Variant {
    std::string name;
    std::function<IRModule(IRModule)> partition;
  };
  std::vector<Variant> variants = {{"host VM", [](IRModule m) { return m; }}};
  codegen::BuildOptions opts;
  for (const std::string& b : backend::list_backends()) {
    auto info = backend::find_backend(b);
    if (!info->codegen) continue;
    variants.push_back({b, [b](IRModule m) { return transform::partition_for(b, m); }});
    codegen::TargetOptionMap options;
    for (const auto& spec : info->target_options)
      if (spec.name == "num_threads") options["num_threads"] = threads;
    opts.targets.push_back(codegen::Target(b, options));
  }
  for (const auto& v : variants) {
    runtime::VirtualMachine vm(codegen::build(v.partition(mod), opts));
    double ms = median_ms(vm, in);
    if (host == 0) host = ms;
    std::printf("  %-9s %9.3f ms  x%6.2f vs host  %7.1f GFLOP/s\n", v.name.c_str(), ms, host / ms, gflop / (ms * 1e-3));
  }
}

}  // namespace

int main(int, char** argv) {
  runtime::restart_with_passive_omp_wait(argv);
  int threads = 2;
  if (const char* t = std::getenv("PARTITA_BENCH_THREADS")) threads = std::atoi(t);
  std::printf("threads: %d (dnnl and cblas; the host VM is single-threaded)\n", threads);
  run("resnet basic block 1x64x56x56", resnet_block(), {random_tensor({1, 64, 56, 56}, 5, 1.0f)},
      2 * 2.0 * 64 * 64 * 9 * 56 * 56 * 1e-9, threads);
  run("MLP 64 x 3 x 1024", mlp(), {random_tensor({64, 1024}, 6, 1.0f)}, 3 * 2.0 * 64 * 1024 * 1024 * 1e-9, threads);
  return 0;
}
