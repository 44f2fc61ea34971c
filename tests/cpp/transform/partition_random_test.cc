// Randomized partitioning over generated functions and pattern tables (partition_gen.h), with
// expected results that do not come from another implementation:
//  - inlining every composite back (evaluating the module as a hash-consed term DAG) gives the
//    input's result with every operator call evaluated once, and the result is well formed;
//  - check functions see consistent tables, and a table a check keeps reads the same after the
//    pass;
//  - callbacks that decide nothing change nothing, and a pattern whose check rejects every match
//    is as if absent;
//  - on a layered CNN/transformer-like graph, the composites are exactly the layers the pattern
//    table describes, in order.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>

#include "partition_gen.h"
#include "partita/dpl/pattern.h"
#include "partita/ir/analysis.h"
#include "partita/op/registry.h"
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
    if (auto* c = e.as<ConstantNode>())
      return Value{intern("const" + std::to_string(c->data.nbytes()), {}), {}, {}};
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
      if (auto* gv = c->op.as<GlobalVarNode>())
        fn = mod.lookup(gv->name_hint).as_ref<FunctionNode>();
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

  std::vector<int> run(const std::string& name) {
    Function main = mod.lookup(name).as_ref<FunctionNode>();
    std::vector<Value> args;
    for (size_t i = 0; i < main->params.size(); ++i)
      args.push_back(Value{intern("param" + std::to_string(i), {}), {}, {}});
    return flat_ids(call(main, args));
  }
};


// A random module (one or two functions) with the generator's options drawn at random.
std::string random_module(std::mt19937& rng, bool& two_functions) {
  auto R = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  gen::Options o;
  o.n_ops = R(0, 9) == 0 ? R(40, 100) : R(1, 30);
  o.tuples = R(0, 2) == 0;
  o.extra_outputs = R(0, 3) == 0;
  o.consts = R(0, 3) == 0;
  o.tuple_out = R(0, 3) == 0;
  o.mixed = R(0, 1) == 0;
  o.match_casts = R(0, 2) == 0;
  o.blocks = R(0, 2) == 0 ? R(2, 3) : 1;
  std::string text = "@I.ir_module\nclass Module:\n" + gen::gen_function(rng, "main", o);
  two_functions = R(0, 3) == 0;
  if (two_functions) {
    o.n_ops = std::max(1, o.n_ops / 2);
    text += "\n" + gen::gen_function(rng, "alt", o);
  }
  return text;
}

TEST(PartitionRandom, InliningBackRestoresTheInput) {
  std::mt19937 rng(20240531);
  auto st = std::make_shared<gen::CallbackState>();
  int fused_somewhere = 0, kept = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    bool two = false;
    std::string text = random_module(rng, two);
    IRModule before = script::parse_module(text);
    auto patterns = gen::gen_patterns(rng);
    bool callbacks = iter % 3 != 0;
    if (callbacks) gen::add_callbacks(patterns, rng, st);
    bool merge = iter % 2 == 1, lift = iter % 5 == 0;
    std::vector<std::string> entries;
    if (two && iter % 4 == 1) entries = {"alt", "main"};
    if (two && iter % 4 == 3) entries = {"main", "main"};
    std::string what = "iteration " + std::to_string(iter) + "\n" + text;
    *st = gen::CallbackState();
    IRModule after =
        fuse_ops_by_pattern(patterns, before, !lift, /*annotate_codegen=*/!merge, entries);
    if (merge) after = merge_composite_functions(after);
    ASSERT_TRUE(well_formed(after)) << what;
    EXPECT_EQ(st->errors, 0) << what;
    for (const auto& [ctx, then] : st->kept) ASSERT_EQ(gen::describe_tables(ctx), then) << what;
    kept += !st->kept.empty();
    for (const char* fn : {"main", "alt"}) {
      if (!before.contains(fn)) continue;
      Flattener a(before), b(after);
      auto ra = a.run(fn);
      b.table = a.table;  // one term table, so ids are comparable
      auto rb = b.run(fn);
      ASSERT_EQ(ra, rb) << fn << " " << what;
      ASSERT_EQ(a.op_calls, b.op_calls) << fn << " " << what;
    }
    if (after->functions.size() > before->functions.size()) ++fused_somewhere;
  }
  EXPECT_GT(fused_somewhere, 1000);  // the generator really exercises fusion
  EXPECT_GT(kept, 20);
}

// Checks that accept every match and attribute getters that add nothing give the result of the
// table without them; a check that rejects every match removes its pattern.
TEST(PartitionRandom, CallbacksThatDecideNothingChangeNothing) {
  std::mt19937 rng(4242);
  int removed_changes = 0;
  for (int iter = 0; iter < 600; ++iter) {
    bool two = false;
    IRModule before = script::parse_module(random_module(rng, two));
    auto plain = gen::gen_patterns(rng);
    std::string what = "iteration " + std::to_string(iter) + "\n" + script::print_module(before);
    auto neutral = plain;
    for (auto& p : neutral) {
      p.check = [](const PatternCheckContext& ctx) { return ctx.var_usages->size() + 1 > 0; };
      p.attrs_getter = [](const std::map<std::string, Expr>&) {
        return std::map<std::string, AttrValue>{};
      };
    }
    std::string expected = script::print_module(fuse_ops_by_pattern(plain, before));
    ASSERT_EQ(script::print_module(fuse_ops_by_pattern(neutral, before)), expected) << what;
    size_t k = size_t(iter) % plain.size();
    auto rejecting = plain;
    rejecting[k].check = [](const PatternCheckContext&) { return false; };
    auto without = plain;
    without.erase(without.begin() + std::ptrdiff_t(k));
    std::string removed = script::print_module(fuse_ops_by_pattern(without, before));
    ASSERT_EQ(script::print_module(fuse_ops_by_pattern(rejecting, before)), removed) << what;
    removed_changes += removed != expected;
  }
  EXPECT_GT(removed_changes, 200);  // removing a pattern usually matters
}

// A CNN/transformer-like chain: conv2d + bias + relu, matmul + bias + gelu, residual adds,
// softmax (left on the host) and multiplies. Returns the module and the kinds of layers in order.
IRModule layered_graph(size_t n_layers, unsigned seed, std::vector<int>& kinds) {
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
  for (size_t layer = 0; layer < n_layers; ++layer) {
    int kind = std::uniform_int_distribution<int>(0, 4)(rng);
    kinds.push_back(kind);
    if (kind == 0) {
      Var c = bind(op::make_call("relax.nn.conv2d", {cur, cw},
                                 {{"padding", std::vector<int64_t>{1, 1, 1, 1}}}),
                   "c");
      cur = bind(op::make_call("relax.nn.relu", {bind(op::make_call("relax.add", {c, cb}), "a")}),
                 "r");
    } else if (kind == 1) {
      Var m = bind(op::make_call("relax.matmul", {cur, lw}), "m");
      cur = bind(op::make_call("relax.nn.gelu", {bind(op::make_call("relax.add", {m, lb}), "a")}),
                 "g");
    } else if (kind == 2) {
      cur = skip = bind(op::make_call("relax.add", {cur, skip}), "s");
    } else if (kind == 3) {
      cur = bind(op::make_call("relax.nn.softmax", {cur}), "sm");
    } else {
      cur = bind(op::make_call("relax.multiply", {cur, skip}), "mu");
    }
  }
  Var out = make<VarNode>("out", cur->struct_info_);
  bs.push_back(make<VarBindingNode>(out, cur));
  Expr body = make<SeqExprNode>(
      std::vector<BindingBlock>{make<BindingBlockNode>(std::move(bs), true)}, out);
  body->struct_info_ = out->struct_info_;
  Function f = make<FunctionNode>(std::vector<Var>{x, cw, cb, lw, lb}, body, out->struct_info_,
                                  true, DictAttrs{{"global_symbol", std::string("main")}});
  f->struct_info_ = func_struct_info_of(*f);
  IRModule mod = IRModule::create();
  mod.add(make<GlobalVarNode>("main"), f);
  return mod;
}

// The calls of `main` in order: an operator's name, or the "Composite" of the called function.
std::vector<std::string> calls_of_main(const IRModule& mod) {
  std::vector<std::string> out;
  auto* seq = mod.lookup("main").as<FunctionNode>()->body.as<SeqExprNode>();
  for (const auto& blk : seq->blocks)
    for (const auto& b : blk->bindings) {
      auto* c = binding_value(*b).as<CallNode>();
      if (!c) continue;
      if (auto* op = c->op.as<OpNode>()) out.push_back(op->name);
      if (auto* gv = c->op.as<GlobalVarNode>())
        out.push_back(*mod.lookup(gv->name_hint).as<FunctionNode>()->attr_string("Composite"));
    }
  return out;
}

TEST(PartitionRandom, LayeredGraphBecomesItsLayers) {
  using dpl::make_fused_bias_activation_pattern;
  auto fp = [](std::string name, Pattern p) {
    FusionPattern f;
    f.name = std::move(name);
    f.pattern = std::move(p);
    f.check = [](const PatternCheckContext& ctx) {
      return !has_leaking_intermediate_variables(ctx);
    };
    return f;
  };
  std::vector<FusionPattern> table{
      fp("cutlass.conv2d_bias_relu",
         make_fused_bias_activation_pattern("relax.nn.conv2d", true, "relax.nn.relu")),
      fp("cutlass.matmul_bias_gelu",
         make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.gelu")),
      fp("cutlass.conv2d", make_fused_bias_activation_pattern("relax.nn.conv2d")),
      fp("cutlass.add", is_op("relax.add")({wildcard(), wildcard()})),
      fp("dnnl.multiply", is_op("relax.multiply")({wildcard(), wildcard()}))};
  for (unsigned seed : {1u, 2u, 3u}) {
    std::vector<int> kinds;
    IRModule mod = layered_graph(400, seed, kinds);
    // In table order every layer is one composite (softmax stays); reversed, the adds go first,
    // so convolutions are grouped alone and the matmul layers stay as they are.
    std::vector<std::string> in_order, reversed;
    for (int k : kinds) {
      static const std::vector<std::vector<std::string>> fwd{{"cutlass.conv2d_bias_relu"},
                                                             {"cutlass.matmul_bias_gelu"},
                                                             {"cutlass.add"},
                                                             {"relax.nn.softmax"},
                                                             {"dnnl.multiply"}};
      static const std::vector<std::vector<std::string>> rev{
          {"cutlass.conv2d", "cutlass.add", "relax.nn.relu"},
          {"relax.matmul", "cutlass.add", "relax.nn.gelu"},
          {"cutlass.add"},
          {"relax.nn.softmax"},
          {"dnnl.multiply"}};
      in_order.insert(in_order.end(), fwd[k].begin(), fwd[k].end());
      reversed.insert(reversed.end(), rev[k].begin(), rev[k].end());
    }
    IRModule fused = fuse_ops_by_pattern(table, mod);
    EXPECT_TRUE(well_formed(fused));
    EXPECT_EQ(calls_of_main(fused), in_order) << "seed " << seed;
    std::vector<FusionPattern> backwards(table.rbegin(), table.rend());
    IRModule fused_back = fuse_ops_by_pattern(backwards, mod);
    EXPECT_TRUE(well_formed(fused_back));
    EXPECT_EQ(calls_of_main(fused_back), reversed) << "seed " << seed;
  }
}

}  // namespace
}  // namespace partita::transform
