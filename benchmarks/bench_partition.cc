// FuseOpsByPattern + MergeCompositeFunctions on generated CNN/transformer-like graphs of 1k,
// 10k, 100k and 1M bindings with a realistic pattern table. Prints each time (wall clock, and
// the CPU time of the thread, which load from other processes disturbs less) and the growth
// ratio between consecutive sizes (10x more bindings should cost about 10x).
//
//   ./bench_partition               # all sizes
//   ./bench_partition 100000        # one size
//   ./bench_partition --check       # every pattern with a check function, as real backends' are
//   ./bench_partition --repeat 3    # the best of 3 runs per size
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "partita/dpl/pattern.h"
#include "partita/op/registry.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "partita/transform/merge_composite_functions.h"

using namespace partita;
using namespace partita::transform;
using dpl::is_op;
using dpl::make_fused_bias_activation_pattern;
using dpl::wildcard;

namespace {

Var bind(std::vector<Binding>& out, Call call, const char* name, size_t i) {
  call->struct_info_ = op::infer_struct_info(*call);
  Var v = make<DataflowVarNode>(std::string(name) + std::to_string(i), call->struct_info_);
  out.push_back(make<VarBindingNode>(v, call));
  return v;
}

// Repeating blocks: conv2d+bias+relu, matmul+bias+gelu, residual add, softmax (host), multiply.
IRModule make_graph(size_t n_bindings, unsigned seed) {
  std::mt19937 rng(seed);
  StructInfo t = tensor_sinfo(std::vector<int64_t>{1, 8, 8, 8}, DataType::Float(32));
  StructInfo w = tensor_sinfo(std::vector<int64_t>{8, 8, 3, 3}, DataType::Float(32));
  StructInfo b = tensor_sinfo(std::vector<int64_t>{1, 8, 1, 1}, DataType::Float(32));
  StructInfo mw = tensor_sinfo(std::vector<int64_t>{8, 8}, DataType::Float(32));
  StructInfo mb = tensor_sinfo(std::vector<int64_t>{8}, DataType::Float(32));
  Var x = make<VarNode>("x", t), cw = make<VarNode>("w", w), cb = make<VarNode>("b", b);
  Var lw = make<VarNode>("mw", mw), lb = make<VarNode>("mb", mb);
  std::vector<Binding> bs;
  bs.reserve(n_bindings + 8);
  Var cur = x, skip = x;
  size_t i = 0;
  while (bs.size() < n_bindings) {
    int kind = std::uniform_int_distribution<int>(0, 9)(rng);
    if (kind <= 3) {
      Var c = bind(bs, op::make_call("relax.nn.conv2d", {cur, cw}, {{"padding", std::vector<int64_t>{1, 1, 1, 1}}}), "c", i);
      Var a = bind(bs, op::make_call("relax.add", {c, cb}), "a", i);
      cur = bind(bs, op::make_call("relax.nn.relu", {a}), "r", i);
    } else if (kind <= 5) {
      Var m = bind(bs, op::make_call("relax.matmul", {cur, lw}), "m", i);
      Var a = bind(bs, op::make_call("relax.add", {m, lb}), "a", i);
      cur = bind(bs, op::make_call("relax.nn.gelu", {a}), "g", i);
    } else if (kind <= 7) {
      cur = bind(bs, op::make_call("relax.add", {cur, skip}), "s", i);
      skip = cur;
    } else if (kind == 8) {
      cur = bind(bs, op::make_call("relax.nn.softmax", {cur}), "sm", i);
    } else {
      cur = bind(bs, op::make_call("relax.multiply", {cur, skip}), "mu", i);
    }
    ++i;
  }
  Var out = make<VarNode>("out", cur->struct_info_);
  bs.push_back(make<VarBindingNode>(out, cur));
  Expr body = make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(std::move(bs), true)}, out);
  body->struct_info_ = out->struct_info_;
  Function f = make<FunctionNode>(std::vector<Var>{x, cw, cb, lw, lb}, body, out->struct_info_, true,
                                  DictAttrs{{"global_symbol", std::string("main")}});
  IRModule mod = IRModule::create();
  GlobalVar gv = make<GlobalVarNode>("main");
  mod.add(gv, f);
  return mod;
}

std::vector<FusionPattern> table(bool with_check) {
  auto fp = [with_check](std::string name, dpl::Pattern p) {
    FusionPattern f;
    f.name = std::move(name);
    f.pattern = std::move(p);
    if (with_check) f.check = [](const PatternCheckContext& ctx) { return !has_leaking_intermediate_variables(ctx); };
    return f;
  };
  return {fp("cutlass.conv2d_bias_relu", make_fused_bias_activation_pattern("relax.nn.conv2d", true, "relax.nn.relu")),
          fp("cutlass.matmul_bias_gelu", make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.gelu")),
          fp("cutlass.conv2d", make_fused_bias_activation_pattern("relax.nn.conv2d")),
          fp("cutlass.add", is_op("relax.add")({wildcard(), wildcard()})),
          fp("dnnl.multiply", is_op("relax.multiply")({wildcard(), wildcard()}))};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Times {
  double fuse = 0, merge = 0, cpu = 0;
  size_t functions = 0;
};

Times run_once(const std::vector<FusionPattern>& patterns, const IRModule& mod) {
  Times t;
  double c0 = thread_cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  IRModule fused = fuse_ops_by_pattern(patterns, mod, true, false);
  t.fuse = seconds_since(t0);
  auto t1 = std::chrono::steady_clock::now();
  IRModule merged = merge_composite_functions(fused);
  t.merge = seconds_since(t1);
  t.cpu = thread_cpu_seconds() - c0;
  t.functions = merged->functions.size();
  return t;  // the modules are freed outside the timed part
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes{1000, 10000, 100000, 1000000};
  bool with_check = false;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--check")
      with_check = true;
    else if (arg == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else
      sizes = {size_t(std::atoll(argv[i]))};
  }
  auto patterns = table(with_check);
  if (with_check) std::printf("every pattern has a check function (has_leaking_intermediate_variables)\n");
  if (repeat > 1) std::printf("best of %d runs per size\n", repeat);
  double prev = 0;
  size_t prev_n = 0;
  std::printf("%10s %10s %10s %10s %10s %10s\n", "bindings", "fuse (s)", "merge (s)", "total (s)", "cpu (s)",
              "cpu growth");
  for (size_t n : sizes) {
    IRModule mod = make_graph(n, 7);
    Times best;
    for (int r = 0; r < repeat; ++r) {
      Times t = run_once(patterns, mod);
      if (r == 0 || t.fuse + t.merge < best.fuse + best.merge) {
        double cpu = r == 0 ? t.cpu : std::min(best.cpu, t.cpu);
        best = t;
        best.cpu = cpu;
      } else {
        best.cpu = std::min(best.cpu, t.cpu);
      }
    }
    double total = best.fuse + best.merge;
    std::printf("%10zu %10.4f %10.4f %10.4f %10.4f", n, best.fuse, best.merge, total, best.cpu);
    if (prev > 0)
      std::printf(" %9.2fx (for %.0fx bindings)\n", best.cpu / prev, double(n) / double(prev_n));
    else
      std::printf(" %10s\n", "-");
    std::printf("           functions after merge: %zu\n", best.functions);
    std::fflush(stdout);
    prev = best.cpu;
    prev_n = n;
  }
  return 0;
}
