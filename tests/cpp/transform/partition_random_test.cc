// Randomized partitioning: >= 500 generated graphs and pattern sets, both composite paths. The
// result must be well formed, and inlining every composite back (evaluating the module as a
// hash-consed term DAG) must give the input's result with every operator call evaluated once.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>

#include "partita/dpl/pattern.h"
#include "partita/ir/analysis.h"
#include "partita/script/parser.h"
#include "partita/transform/fuse_ops_by_pattern.h"
#include "partita/transform/merge_composite_functions.h"

namespace partita::transform {
namespace {

using dpl::is_op;
using dpl::Pattern;
using dpl::wildcard;

// ---- inlining evaluator: every call of a function is expanded into its body ----
struct Value {
  int id = -1;
  std::vector<Value> items;
  Function fn;
};

struct Flattener {
  explicit Flattener(IRModule m) : mod(std::move(m)) {}
  IRModule mod;
  std::map<std::pair<std::string, std::vector<int>>, int> table;
  int op_calls = 0;

  int intern(const std::string& op, std::vector<int> args) {
    auto key = std::make_pair(op, std::move(args));
    auto it = table.find(key);
    if (it != table.end()) return it->second;
    int id = int(table.size());
    table.emplace(std::move(key), id);
    return id;
  }

  using Env = std::unordered_map<const VarNode*, Value>;
  Value eval(const Expr& e, Env& env) {
    if (auto* v = e.as<VarNode>()) {
      auto it = env.find(v);
      if (it == env.end()) throw std::runtime_error("unbound variable " + v->name_hint);
      return it->second;
    }
    if (auto* t = e.as<TupleNode>()) {
      Value out;
      for (const auto& f : t->fields) out.items.push_back(eval(f, env));
      return out;
    }
    if (auto* g = e.as<TupleGetItemNode>()) return eval(g->tuple, env).items.at(g->index);
    if (auto* f = e.as<FunctionNode>()) return Value{-1, {}, Function(f)};
    if (auto* c = e.as<CallNode>()) {
      std::vector<Value> args;
      for (const auto& a : c->args) args.push_back(eval(a, env));
      if (auto* op = c->op.as<OpNode>()) {
        ++op_calls;
        std::vector<int> ids;
        for (const auto& a : args) ids.push_back(a.id);
        return Value{intern(op->name, ids), {}, {}};
      }
      Function fn;
      if (auto* gv = c->op.as<GlobalVarNode>()) fn = mod.lookup(gv->name_hint).as_ref<FunctionNode>();
      else fn = eval(c->op, env).fn;
      if (!fn) throw std::runtime_error("call of a non-function");
      return call(fn, args);
    }
    throw std::runtime_error("unexpected expression");
  }

  Value call(const Function& fn, const std::vector<Value>& args) {
    Env env;
    for (size_t i = 0; i < fn->params.size(); ++i) env[fn->params[i].get()] = args.at(i);
    auto* seq = fn->body.as<SeqExprNode>();
    for (const auto& blk : seq->blocks)
      for (const auto& b : blk->bindings) env[b->var.get()] = eval(binding_value(*b), env);
    return eval(seq->body, env);
  }

  std::vector<int> flat_ids(const Value& v) {
    if (v.id >= 0) return {v.id};
    std::vector<int> out;
    for (const auto& i : v.items) {
      auto s = flat_ids(i);
      out.insert(out.end(), s.begin(), s.end());
    }
    return out;
  }

  std::vector<int> run() {
    Function main = mod.lookup("main").as_ref<FunctionNode>();
    std::vector<Value> args;
    for (size_t i = 0; i < main->params.size(); ++i) args.push_back(Value{intern("param" + std::to_string(i), {}), {}, {}});
    return flat_ids(call(main, args));
  }
};

std::string gen_module(std::mt19937& rng, int n_ops, bool tuple_out) {
  const std::string T = "R.Tensor((4, 4), dtype=\"float32\")";
  std::vector<std::string> pool{"x0", "x1", "x2"};
  std::set<std::string> used;
  std::ostringstream body;
  auto pick = [&]() -> std::string {
    // Prefer recent values so chains form, but reach back sometimes (diamonds, long edges).
    int n = int(pool.size());
    int back = std::uniform_int_distribution<int>(0, 99)(rng) < 70 ? std::uniform_int_distribution<int>(0, std::min(n - 1, 2))(rng)
                                                                     : std::uniform_int_distribution<int>(0, n - 1)(rng);
    used.insert(pool[n - 1 - back]);
    return pool[n - 1 - back];
  };
  static const char* binary[] = {"R.add", "R.multiply", "R.subtract"};
  for (int i = 0; i < n_ops; ++i) {
    std::string v = "v" + std::to_string(i);
    int k = std::uniform_int_distribution<int>(0, 5)(rng);
    body << "            " << v << ": " << T << " = ";
    if (k <= 2) body << binary[k] << "(" << pick() << ", " << pick() << ")";
    else if (k == 3) body << "R.nn.relu(" << pick() << ")";
    else if (k == 4) body << "R.exp(" << pick() << ")";
    else body << "R.matmul(" << pick() << ", " << pick() << ", out_dtype=None)";
    body << "\n";
    pool.push_back(v);
  }
  // Every value nobody uses is returned, so there is no dead code; sometimes also an
  // intermediate value (which then leaks out of any group containing it).
  std::vector<std::string> outs;
  for (size_t i = 3; i < pool.size(); ++i)
    if (!used.count(pool[i])) outs.push_back(pool[i]);
  if (tuple_out && n_ops > 2) outs.push_back(pool[3 + std::uniform_int_distribution<int>(0, n_ops - 2)(rng)]);
  std::string out = outs[0], ret = T;
  if (outs.size() > 1) {
    ret = "R.Tuple(";
    std::string fields;
    for (size_t i = 0; i < outs.size(); ++i) {
      ret += (i ? ", " : "") + T;
      fields += (i ? ", " : "") + outs[i];
    }
    ret += ")";
    body << "            out: " << ret << " = (" << fields << ")\n";
    out = "out";
  }
  std::ostringstream m;
  m << "@I.ir_module\nclass Module:\n    @R.function\n    def main(x0: " << T << ", x1: " << T << ", x2: " << T
    << ") -> " << ret << ":\n        with R.dataflow():\n"
    << body.str() << "            R.output(" << out << ")\n        return " << out << "\n";
  return m.str();
}

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
  };
  std::shuffle(pool.begin(), pool.end(), rng);
  int k = std::uniform_int_distribution<int>(1, 5)(rng);
  std::vector<FusionPattern> out;
  for (int i = 0; i < k; ++i) {
    FusionPattern p;
    p.name = std::string(std::uniform_int_distribution<int>(0, 1)(rng) ? "A." : "B.") + pool[i].first;
    p.pattern = pool[i].second();
    if (std::uniform_int_distribution<int>(0, 4)(rng) == 0)
      p.check = [](const PatternCheckContext& ctx) { return !has_leaking_intermediate_variables(ctx); };
    out.push_back(std::move(p));
  }
  return out;
}

TEST(PartitionRandom, InliningBackRestoresTheInput) {
  std::mt19937 rng(20240531);
  int fused_somewhere = 0;
  for (int iter = 0; iter < 600; ++iter) {
    int n_ops = std::uniform_int_distribution<int>(1, 30)(rng);
    std::string text = gen_module(rng, n_ops, std::uniform_int_distribution<int>(0, 3)(rng) == 0);
    IRModule before = script::parse_module(text);
    auto patterns = gen_patterns(rng);
    bool merge = iter % 2 == 1;
    IRModule after = fuse_ops_by_pattern(patterns, before, true, /*annotate_codegen=*/!merge);
    if (merge) after = merge_composite_functions(after);
    ASSERT_TRUE(well_formed(after)) << "iteration " << iter << "\n" << text;
    Flattener a(before), b(after);
    // Share one term table so ids are comparable.
    b.table = a.table;
    auto ra = a.run();
    b.table = a.table;
    auto rb = b.run();
    ASSERT_EQ(ra, rb) << "iteration " << iter << "\n" << text;
    ASSERT_EQ(a.op_calls, b.op_calls) << "iteration " << iter << "\n" << text;
    if (after->functions.size() > 1) ++fused_somewhere;
  }
  EXPECT_GT(fused_somewhere, 300);  // the generator really exercises fusion
}

}  // namespace
}  // namespace partita::transform
