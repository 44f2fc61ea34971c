// FuseOpsByPattern has two implementations: the reference, pattern by pattern (each pattern
// partitions the functions the previous one left), and the deferred one, which rebuilds the
// functions once at the end. They must give exactly the same module (same text, same names,
// same binding order) wherever the deferred one applies; elsewhere it must decline.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>

#include "../../../src/transform/fuse_ops_by_pattern_deferred.h"
#include "partita/dpl/pattern.h"
#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::transform {
namespace {

using dpl::is_op;
using dpl::Pattern;
using dpl::wildcard;

const std::string T = "R.Tensor((4, 4), dtype=\"float32\")";

struct GenOptions {
  int n_ops = 10;
  bool tuples = false;        // tuples and get-items of them
  bool extra_outputs = false;  // some intermediate values leave the block (non-dataflow vars)
  bool consts = false;        // constant operands
  bool tuple_out = false;     // the function returns a tuple with an intermediate value
};

// One function `name` with a dataflow block of random element-wise / matmul calls.
std::string gen_function(std::mt19937& rng, const std::string& name, const GenOptions& o) {
  auto R = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::string> pool{"x0", "x1", "x2"};
  std::set<std::string> used, extra;
  std::ostringstream body;
  auto pick = [&]() -> std::string {
    int n = int(pool.size());
    int back = R(0, 99) < 70 ? R(0, std::min(n - 1, 2)) : R(0, n - 1);
    used.insert(pool[n - 1 - back]);
    return pool[n - 1 - back];
  };
  static const char* binary[] = {"R.add", "R.multiply", "R.subtract"};
  for (int i = 0; i < o.n_ops; ++i) {
    std::string v = "v" + std::to_string(i);
    int k = R(0, o.tuples ? 8 : 5);
    if (k == 6 || k == 7) {
      std::string a = pick(), b = pick(), t = "t" + std::to_string(i);
      body << "            " << t << ": R.Tuple(" << T << ", " << T << ") = (" << a << ", " << b << ")\n";
      body << "            " << v << ": " << T << " = " << t << "[" << R(0, 1) << "]\n";
    } else {
      body << "            " << v << ": " << T << " = ";
      if (k <= 2) {
        std::string a = pick();
        std::string b = o.consts && R(0, 4) == 0 ? std::string("R.const(1.5, \"float32\")") : pick();
        body << binary[k] << "(" << a << ", " << b << ")\n";
      } else if (k == 3) {
        body << "R.nn.relu(" << pick() << ")\n";
      } else if (k == 4 || k == 8) {
        body << "R.exp(" << pick() << ")\n";
      } else {
        std::string a = pick(), b = pick();
        body << "R.matmul(" << a << ", " << b << ", out_dtype=None)\n";
      }
    }
    pool.push_back(v);
    if (o.extra_outputs && R(0, 7) == 0) extra.insert(v);
  }
  std::vector<std::string> outs;
  for (size_t i = 3; i < pool.size(); ++i)
    if (!used.count(pool[i])) outs.push_back(pool[i]);
  if (o.tuple_out && o.n_ops > 2) outs.push_back(pool[3 + R(0, o.n_ops - 2)]);
  std::set<std::string> leaving(outs.begin(), outs.end());
  leaving.insert(extra.begin(), extra.end());
  std::string out = outs[0], ret = T, tail;
  if (outs.size() > 1) {
    ret = "R.Tuple(";
    std::string fields;
    for (size_t i = 0; i < outs.size(); ++i) {
      ret += (i ? ", " : "") + T;
      fields += (i ? ", " : "") + outs[i];
    }
    ret += ")";
    tail = "        out: " + ret + " = (" + fields + ")\n";
    out = "out";
  }
  std::string list;
  for (const auto& v : leaving) list += (list.empty() ? "" : ", ") + v;
  std::ostringstream m;
  m << "    @R.function\n    def " << name << "(x0: " << T << ", x1: " << T << ", x2: " << T << ") -> " << ret
    << ":\n        with R.dataflow():\n"
    << body.str() << "            R.output(" << list << ")\n"
    << tail << "        return " << out << "\n";
  return m.str();
}

// Patterns that look only at values (what the deferred path handles), including Or, any-op
// calls, constants, get-items, a wildcard used twice and Not.
std::vector<FusionPattern> gen_patterns(std::mt19937& rng) {
  auto w = [] { return wildcard(); };
  std::vector<std::pair<std::string, std::function<Pattern()>>> pool{
      {"add", [&] { return is_op("relax.add")({w(), w()}); }},
      {"mul", [&] { return is_op("relax.multiply")({w(), w()}); }},
      {"relu", [&] { return is_op("relax.nn.relu")({w()}); }},
      {"exp", [&] { return is_op("relax.exp")({w()}); }},
      {"matmul", [&] { return is_op("relax.matmul")({w(), w()}); }},
      {"add_relu", [&] { return is_op("relax.nn.relu")({is_op("relax.add")({w(), w()})}); }},
      {"matmul_add", [&] { return is_op("relax.add")({is_op("relax.matmul")({w(), w()}), w()}); }},
      {"exp_relu", [&] { return is_op("relax.exp")({is_op("relax.nn.relu")({w()})}); }},
      {"mul_sub", [&] { return is_op("relax.subtract")({is_op("relax.multiply")({w(), w()}), w()}); }},
      {"mm_add_relu", [&] { return dpl::make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.relu"); }},
      {"sub_exp_add",
       [&] { return is_op("relax.add")({is_op("relax.exp")({is_op("relax.subtract")({w(), w()})}), w()}); }},
      {"add_or_mul", [&] { return is_op("relax.add")({w(), w()}) | is_op("relax.multiply")({w(), w()}); }},
      {"anycall", [&] { return dpl::make_call(w(), {w(), w()}); }},
      {"add_const", [&] { return is_op("relax.add")({w(), dpl::is_const()}); }},
      {"exp_tgi", [&] { return is_op("relax.exp")({dpl::is_tuple_get_item(w(), 0)}); }},
      {"relu_tgi", [&] { return is_op("relax.nn.relu")({dpl::is_tuple_get_item(dpl::is_tuple({w(), w()}))}); }},
      {"add_same", [&] { Pattern x = w(); return is_op("relax.add")({x, x}); }},
      {"mul_not_add", [&] { return is_op("relax.multiply")({~is_op("relax.add")({w(), w()}), w()}); }},
      {"call_gv", [&] { return dpl::make_call(dpl::is_gv(""), {w()}, true); }},
      {"relu_f32", [&] { return is_op("relax.nn.relu")({w().has_dtype("float32")}); }},
  };
  std::shuffle(pool.begin(), pool.end(), rng);
  int k = std::uniform_int_distribution<int>(1, 6)(rng);
  std::vector<FusionPattern> out;
  for (int i = 0; i < k; ++i) {
    FusionPattern p;
    p.name = std::string(std::uniform_int_distribution<int>(0, 1)(rng) ? "A." : "B.") + pool[i].first;
    p.pattern = pool[i].second();
    out.push_back(std::move(p));
  }
  if (std::uniform_int_distribution<int>(0, 7)(rng) == 0) out.push_back(out[0]);  // a pattern twice
  return out;
}

void expect_same(const IRModule& ref, const IRModule& deferred, const std::string& what) {
  ASSERT_EQ(script::print_module(deferred), script::print_module(ref)) << what;
  EXPECT_EQ(structural_diff(deferred, ref), std::nullopt) << what;
  EXPECT_TRUE(well_formed(deferred)) << what;
}

TEST(PartitionDeferred, SameModuleAsPatternByPattern) {
  std::mt19937 rng(777);
  int grouped = 0;
  for (int iter = 0; iter < 800; ++iter) {
    auto R = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    GenOptions o;
    o.n_ops = iter % 10 == 0 ? R(40, 150) : R(1, 30);
    o.tuples = R(0, 2) == 0;
    o.extra_outputs = R(0, 3) == 0;
    o.consts = R(0, 3) == 0;
    o.tuple_out = R(0, 3) == 0;
    std::string text = "@I.ir_module\nclass Module:\n" + gen_function(rng, "main", o);
    bool two_functions = R(0, 4) == 0;
    if (two_functions) {
      GenOptions o2 = o;
      o2.n_ops = std::max(1, o.n_ops / 2);
      text += "\n" + gen_function(rng, "alt", o2);
    }
    IRModule before = script::parse_module(text);
    auto patterns = gen_patterns(rng);
    bool lift = R(0, 3) == 0;
    std::vector<std::string> entries;
    if (two_functions && R(0, 2) == 0) entries = {"main"};
    std::string what = "iteration " + std::to_string(iter) + "\n" + text;
    IRModule ref = detail::fuse_patterns_one_by_one(patterns, before, lift, entries);
    auto deferred = detail::fuse_patterns_deferred(patterns, before, lift, entries);
    ASSERT_TRUE(deferred.has_value()) << what;
    expect_same(ref, *deferred, what);
    if (ref->functions.size() > before->functions.size()) ++grouped;
  }
  EXPECT_GT(grouped, 600);  // the generator really makes groups
}

// A CNN/transformer-like chain (as benchmarks/bench_partition.cc) with its pattern table.
IRModule layered_graph(size_t n_bindings, unsigned seed) {
  std::mt19937 rng(seed);
  StructInfo t = tensor_sinfo(std::vector<int64_t>{1, 8, 8, 8}, DataType::Float(32));
  StructInfo w = tensor_sinfo(std::vector<int64_t>{8, 8, 3, 3}, DataType::Float(32));
  StructInfo b = tensor_sinfo(std::vector<int64_t>{1, 8, 1, 1}, DataType::Float(32));
  StructInfo mw = tensor_sinfo(std::vector<int64_t>{8, 8}, DataType::Float(32));
  StructInfo mb = tensor_sinfo(std::vector<int64_t>{8}, DataType::Float(32));
  Var x = make<VarNode>("x", t), cw = make<VarNode>("w", w), cb = make<VarNode>("b", b);
  Var lw = make<VarNode>("mw", mw), lb = make<VarNode>("mb", mb);
  std::vector<Binding> bs;
  auto bind = [&](Call call, const std::string& name) {
    call->struct_info_ = op::infer_struct_info(*call);
    Var v = make<DataflowVarNode>(name + std::to_string(bs.size()), call->struct_info_);
    bs.push_back(make<VarBindingNode>(v, call));
    return v;
  };
  Var cur = x, skip = x;
  while (bs.size() < n_bindings) {
    int kind = std::uniform_int_distribution<int>(0, 9)(rng);
    if (kind <= 3) {
      Var c = bind(op::make_call("relax.nn.conv2d", {cur, cw}, {{"padding", std::vector<int64_t>{1, 1, 1, 1}}}), "c");
      cur = bind(op::make_call("relax.nn.relu", {bind(op::make_call("relax.add", {c, cb}), "a")}), "r");
    } else if (kind <= 5) {
      Var m = bind(op::make_call("relax.matmul", {cur, lw}), "m");
      cur = bind(op::make_call("relax.nn.gelu", {bind(op::make_call("relax.add", {m, lb}), "a")}), "g");
    } else if (kind <= 7) {
      cur = skip = bind(op::make_call("relax.add", {cur, skip}), "s");
    } else if (kind == 8) {
      cur = bind(op::make_call("relax.nn.softmax", {cur}), "sm");
    } else {
      cur = bind(op::make_call("relax.multiply", {cur, skip}), "mu");
    }
  }
  Var out = make<VarNode>("out", cur->struct_info_);
  bs.push_back(make<VarBindingNode>(out, cur));
  Expr body = make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(std::move(bs), true)}, out);
  body->struct_info_ = out->struct_info_;
  Function f = make<FunctionNode>(std::vector<Var>{x, cw, cb, lw, lb}, body, out->struct_info_, true,
                                  DictAttrs{{"global_symbol", std::string("main")}});
  f->struct_info_ = func_struct_info_of(*f);
  IRModule mod = IRModule::create();
  mod.add(make<GlobalVarNode>("main"), f);
  return mod;
}

TEST(PartitionDeferred, LayeredGraph) {
  auto fp = [](std::string name, Pattern p) {
    FusionPattern f;
    f.name = std::move(name);
    f.pattern = std::move(p);
    return f;
  };
  using dpl::make_fused_bias_activation_pattern;
  std::vector<FusionPattern> table{
      fp("cutlass.conv2d_bias_relu", make_fused_bias_activation_pattern("relax.nn.conv2d", true, "relax.nn.relu")),
      fp("cutlass.matmul_bias_gelu", make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.gelu")),
      fp("cutlass.conv2d", make_fused_bias_activation_pattern("relax.nn.conv2d")),
      fp("cutlass.add", is_op("relax.add")({wildcard(), wildcard()})),
      fp("dnnl.multiply", is_op("relax.multiply")({wildcard(), wildcard()}))};
  for (unsigned seed : {1u, 2u, 3u}) {
    IRModule mod = layered_graph(600, seed);
    for (int order = 0; order < 2; ++order) {
      IRModule ref = detail::fuse_patterns_one_by_one(table, mod, false, {});
      auto deferred = detail::fuse_patterns_deferred(table, mod, false, {});
      ASSERT_TRUE(deferred.has_value());
      expect_same(ref, *deferred, "seed " + std::to_string(seed));
      std::reverse(table.begin(), table.end());
    }
  }
}

TEST(PartitionDeferred, DeclinesWhatItDoesNotHandle) {
  IRModule one_block = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.exp(x)
            b: R.Tensor((4,), dtype="float32") = R.nn.relu(a)
            R.output(b)
        return b
)");
  IRModule two_blocks = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.exp(x)
            R.output(a)
        with R.dataflow():
            b: R.Tensor((4,), dtype="float32") = R.nn.relu(a)
            R.output(b)
        return b
)");
  FusionPattern relu;
  relu.name = "A.relu";
  relu.pattern = is_op("relax.nn.relu")({wildcard()});
  EXPECT_TRUE(detail::fuse_patterns_deferred({relu}, one_block, false, {}).has_value());
  EXPECT_FALSE(detail::fuse_patterns_deferred({relu}, two_blocks, false, {}).has_value());
  FusionPattern checked = relu;
  checked.check = [](const PatternCheckContext&) { return true; };
  EXPECT_FALSE(detail::fuse_patterns_deferred({checked}, one_block, false, {}).has_value());
  FusionPattern by_var = relu;
  by_var.pattern = is_op("relax.nn.relu")({dpl::is_dfv("a")});
  EXPECT_FALSE(detail::fuse_patterns_deferred({by_var}, one_block, false, {}).has_value());
  // The public entry point gives the reference's result either way.
  for (const auto& mod : {one_block, two_blocks})
    for (const auto& pats : {std::vector<FusionPattern>{relu}, std::vector<FusionPattern>{checked},
                             std::vector<FusionPattern>{by_var}})
      expect_same(detail::fuse_patterns_one_by_one(pats, mod, false, {}), fuse_ops_by_pattern(pats, mod), "public");
}

}  // namespace
}  // namespace partita::transform
