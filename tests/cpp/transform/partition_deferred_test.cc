// FuseOpsByPattern has two implementations: the reference, pattern by pattern (each pattern
// partitions the functions the previous one left), and the deferred one, which rebuilds the
// functions once at the end. They must give exactly the same module (same text, same names,
// same binding order) wherever the deferred one applies; elsewhere it must decline. Check
// functions and attribute getters must be called in the same order and see the same things
// (the block as the earlier patterns left it).
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
      // Patterns that look at variables: a group's output ("lv") or a parameter.
      {"relu_dfv", [&] { return is_op("relax.nn.relu")({dpl::is_dfv()}); }},
      {"add_lv", [&] { return is_op("relax.add")({dpl::is_dfv("lv"), w()}); }},
      {"exp_x0", [&] { return is_op("relax.exp")({dpl::is_var("x0")}); }},
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

// ---- check functions and attribute getters -----------------------------------------------------

// A function whose values differ in shape ((4, 4) or (1, 4)) and dtype (float32, or float16
// between astype calls), for checks that look at struct info.
std::string gen_mixed_function(std::mt19937& rng, const std::string& name, const GenOptions& o) {
  auto R = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  struct TVar {
    std::string name;
    bool row, f16;  // row: shape (1, 4)
  };
  auto type = [](bool row, bool f16) {
    return std::string("R.Tensor((") + (row ? "1, 4" : "4, 4") + "), dtype=\"" + (f16 ? "float16" : "float32") + "\")";
  };
  std::vector<TVar> pool{{"x0", false, false}, {"x1", false, false}, {"x2", true, false}};
  std::set<std::string> used, extra;
  std::ostringstream body;
  // A recent value (70%) or any, among those `ok` accepts; -1 when none.
  auto pick = [&](auto&& ok) -> int {
    std::vector<int> c;
    for (int i = 0; i < int(pool.size()); ++i)
      if (ok(pool[i])) c.push_back(i);
    if (c.empty()) return -1;
    int n = int(c.size());
    int back = R(0, 99) < 70 ? R(0, std::min(n - 1, 2)) : R(0, n - 1);
    used.insert(pool[c[n - 1 - back]].name);
    return c[n - 1 - back];
  };
  auto any = [](const TVar&) { return true; };
  static const char* binary[] = {"R.add", "R.multiply", "R.subtract"};
  for (int i = 0; i < o.n_ops; ++i) {
    std::string v = "v" + std::to_string(i);
    TVar a = pool[pick(any)];
    auto same_dtype = [&](const TVar& x) { return x.f16 == a.f16; };
    int k = R(0, o.tuples ? 10 : 8);
    TVar out{v, a.row, a.f16};
    std::string value;
    if (R(0, 12) == 0) {
      value = a.name;  // an alias: a value bound more than once when repeated
    } else if (k <= 2) {
      if (o.consts && !a.f16 && R(0, 4) == 0) {
        value = std::string(binary[k]) + "(" + a.name + ", R.const(1.5, \"float32\"))";
      } else {
        TVar b = pool[pick(same_dtype)];
        out.row = a.row && b.row;
        value = std::string(binary[k]) + "(" + a.name + ", " + b.name + ")";
      }
    } else if (k == 3) {
      value = "R.nn.relu(" + a.name + ")";
    } else if (k == 4) {
      value = "R.exp(" + a.name + ")";
    } else if (k == 5) {
      int b = pick([&](const TVar& x) { return x.f16 == a.f16 && !x.row; });
      value = b < 0 ? "R.nn.relu(" + a.name + ")" : "R.matmul(" + a.name + ", " + pool[b].name + ", out_dtype=None)";
    } else if (k == 6) {
      out.row = true;
      value = "R.sum(" + a.name + ", axis=[0], keepdims=True)";
    } else if (k == 7 || k == 8) {
      out.f16 = !a.f16;
      value = "R.astype(" + a.name + ", dtype=\"" + (out.f16 ? "float16" : "float32") + "\")";
    } else {
      TVar b = pool[pick(any)];
      std::string t = "t" + std::to_string(i);
      body << "            " << t << ": R.Tuple(" << type(a.row, a.f16) << ", " << type(b.row, b.f16) << ") = ("
           << a.name << ", " << b.name << ")\n";
      int at = R(0, 1);
      out = at ? TVar{v, b.row, b.f16} : TVar{v, a.row, a.f16};
      value = t + "[" + std::to_string(at) + "]";
    }
    body << "            " << v << ": " << type(out.row, out.f16) << " = " << value << "\n";
    pool.push_back(out);
    if (o.extra_outputs && R(0, 7) == 0) extra.insert(v);
  }
  std::vector<TVar> outs;
  for (size_t i = 3; i < pool.size(); ++i)
    if (!used.count(pool[i].name)) outs.push_back(pool[i]);
  if (o.tuple_out && o.n_ops > 2) outs.push_back(pool[3 + R(0, o.n_ops - 2)]);
  std::set<std::string> leaving;
  for (const auto& x : outs) leaving.insert(x.name);
  leaving.insert(extra.begin(), extra.end());
  std::string out = outs[0].name, ret = type(outs[0].row, outs[0].f16), tail;
  if (outs.size() > 1) {
    ret = "R.Tuple(";
    std::string fields;
    for (size_t i = 0; i < outs.size(); ++i) {
      ret += (i ? ", " : "") + type(outs[i].row, outs[i].f16);
      fields += (i ? ", " : "") + outs[i].name;
    }
    ret += ")";
    tail = "        out: " + ret + " = (" + fields + ")\n";
    out = "out";
  }
  std::string list;
  for (const auto& v : leaving) list += (list.empty() ? "" : ", ") + v;
  std::ostringstream m;
  m << "    @R.function\n    def " << name << "(x0: " << type(false, false) << ", x1: " << type(false, false)
    << ", x2: " << type(true, false) << ") -> " << ret << ":\n        with R.dataflow():\n"
    << body.str() << "            R.output(" << list << ")\n"
    << tail << "        return " << out << "\n";
  return m.str();
}

// What checks decide on. Each looks at something the two paths could get wrong: struct info,
// users of variables inside and outside the match, the order of users, the block's size as the
// earlier patterns left it, variables made by earlier groups, and the number of calls.
enum CheckKind {
  kNoLeak,            // has_leaking_intermediate_variables (var_usages of matched bindings)
  kFloat32,           // every matched value is float32
  kFullShape,         // the root's shape is (4, 4)
  kNoGroupArgs,       // no argument of the root is a variable an earlier group made (lv / gv)
  kSingleUser,        // the root's variable (value_to_bound_var) has at most one user
  kArgUsersEven,      // the arguments' variables have an even number of users in all
  kFirstUserIsRoot,   // the first user of the first argument bound in the block is the root
  kBlockSize,         // the block has a number of bindings not divisible by 3
  kEveryThirdCall,    // rejects every third call (the calls' order and number)
  kNumKinds
};
const char* kind_name(int k) {
  static const char* names[] = {"no_leak", "float32", "full_shape", "no_group_args", "single_user",
                                "arg_users_even", "first_user_is_root", "block_size", "every_third_call"};
  return names[k];
}

// What a run of the callbacks saw and decided (reset before each path runs).
struct CallbackState {
  std::vector<std::string> log;
  int calls = 0;
  int errors = 0;  // inconsistent tables
  int accepted[kNumKinds] = {}, rejected[kNumKinds] = {};
  std::vector<PatternCheckContext> kept;  // contexts a check keeps past the pass
};

std::string name_of(const Expr& e) {
  if (auto* v = e.as<VarNode>()) return v->name_hint;
  if (!e) return "<null>";
  return "<" + script::print_expr(e) + ">";
}

Var bound_var(const PatternCheckContext& ctx, const Expr& value) {
  auto it = ctx.value_to_bound_var->find(value);
  return it == ctx.value_to_bound_var->end() ? Var() : it->second;
}

std::vector<Expr> args_of(const Expr& e) {
  if (auto* c = e.as<CallNode>()) return c->args;
  return {};
}

// Everything a check can see of its match, as text.
std::string describe(const PatternCheckContext& ctx) {
  std::ostringstream out;
  out << script::print_expr(ctx.matched_expr) << " : " << script::print_expr(ctx.matched_expr->struct_info_);
  out << " bound to " << name_of(bound_var(ctx, ctx.matched_expr)) << "; bindings";
  std::vector<std::string> bs;
  for (const auto& [var, value] : ctx.matched_bindings)
    bs.push_back(var->name_hint + (var.as<DataflowVarNode>() ? "" : "(out)") + " = " + script::print_expr(value));
  std::sort(bs.begin(), bs.end());
  for (const auto& b : bs) out << " [" << b << "]";
  for (const auto& [name, e] : ctx.annotated_expr) out << "; " << name << " = " << script::print_expr(e);
  for (const auto& a : args_of(ctx.matched_expr)) {
    auto* v = a.as<VarNode>();
    if (!v) continue;
    out << "; users of " << v->name_hint << " (bound as a value to " << name_of(bound_var(ctx, a))
        << ") : " << script::print_expr(a->struct_info_);
    auto it = ctx.var_usages->find(Var(v));
    if (it == ctx.var_usages->end()) {
      out << " (not bound in the block)";
      continue;
    }
    for (const auto& u : it->second) out << " " << u->name_hint;
  }
  return out.str();
}

bool decide(int kind, const PatternCheckContext& ctx, CallbackState& st) {
  auto tensor = [](const Expr& e) { return e->struct_info_.as<TensorStructInfoNode>(); };
  switch (kind) {
    case kNoLeak: return !has_leaking_intermediate_variables(ctx);
    case kFloat32: {
      auto f32 = [&](const Expr& e) { return tensor(e) && tensor(e)->dtype == DataType::Float(32); };
      if (!f32(ctx.matched_expr)) return false;
      for (const auto& [var, value] : ctx.matched_bindings)
        if (!f32(value)) return false;
      return true;
    }
    case kFullShape: {
      auto* t = tensor(ctx.matched_expr);
      auto* d = t && t->shape && !t->shape->empty() ? (*t->shape)[0].as<IntImmNode>() : nullptr;
      return d && d->value == 4;
    }
    case kNoGroupArgs:
      for (const auto& a : args_of(ctx.matched_expr)) {
        std::string n = a.as<VarNode>() ? a.as<VarNode>()->name_hint : "";
        if (n.rfind("lv", 0) == 0 || n.rfind("gv", 0) == 0) return false;
      }
      return true;
    case kSingleUser: {
      Var root = bound_var(ctx, ctx.matched_expr);
      if (!root.defined()) ++st.errors;  // the root is always bound
      return root.defined() && ctx.var_usages->at(root).size() <= 1;
    }
    case kArgUsersEven: {
      size_t users = 0;
      for (const auto& a : args_of(ctx.matched_expr))
        if (auto* v = a.as<VarNode>())
          if (auto it = ctx.var_usages->find(Var(v)); it != ctx.var_usages->end()) users += it->second.size();
      return users % 2 == 0;
    }
    case kFirstUserIsRoot: {
      Var root = bound_var(ctx, ctx.matched_expr);
      for (const auto& a : args_of(ctx.matched_expr))
        if (auto* v = a.as<VarNode>())
          if (auto it = ctx.var_usages->find(Var(v)); it != ctx.var_usages->end())
            return !it->second.empty() && it->second.front() == root;
      return true;
    }
    case kBlockSize: {
      // An entry per binding (fewer values when an alias repeats one); every matched binding is
      // one of them.
      if (ctx.var_usages->size() < ctx.value_to_bound_var->size()) ++st.errors;
      for (const auto& [var, value] : ctx.matched_bindings)
        if (!ctx.var_usages->count(var) || !(ctx.value_to_bound_var->at(value) == var)) ++st.errors;
      return ctx.value_to_bound_var->size() % 3 != 0;
    }
    case kEveryThirdCall: return st.calls % 3 != 0;
  }
  return true;
}

// Gives some patterns a check (one or two kinds), an attribute getter reading the annotated root
// and first argument, or a check that keeps its contexts.
void add_callbacks(std::vector<FusionPattern>& patterns, std::mt19937& rng,
                   std::shared_ptr<CallbackState> st) {
  auto R = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (auto& p : patterns) {
    if (R(0, 3) != 0) {
      std::vector<int> kinds{R(0, kNumKinds - 1)};
      if (R(0, 2) == 0) kinds.push_back(R(0, kNumKinds - 1));
      bool keep = R(0, 9) == 0;
      std::string name = p.name;
      p.check = [st, kinds, keep, name](const PatternCheckContext& ctx) {
        ++st->calls;
        bool ok = true;
        for (int k : kinds) {
          bool d = decide(k, ctx, *st);
          (d ? st->accepted : st->rejected)[k]++;
          ok = ok && d;
        }
        st->log.push_back(name + " " + (ok ? "accepts " : "rejects ") + describe(ctx));
        if (keep) st->kept.push_back(ctx);
        return ok;
      };
    }
    if (R(0, 2) == 0) {
      p.annotation_patterns["root"] = p.pattern;
      if (p.pattern->kind == dpl::PatternKind::Call && !p.pattern->args.empty())
        p.annotation_patterns["arg"] = p.pattern->args[0];
      std::string name = p.name;
      p.attrs_getter = [st, name](const std::map<std::string, Expr>& annotated) {
        std::map<std::string, AttrValue> attrs;
        std::string seen;
        for (const auto& [k, e] : annotated) seen += " " + k + "=" + name_of(e);
        st->log.push_back(name + " attrs" + seen);
        if (auto it = annotated.find("arg"); it != annotated.end()) attrs["arg"] = name_of(it->second);
        if (auto it = annotated.find("root"); it != annotated.end())
          if (auto* t = it->second->struct_info_.as<TensorStructInfoNode>()) attrs["ndim"] = int64_t(t->ndim);
        return attrs;
      };
    }
  }
}

// The tables of the contexts a check kept, as text (they must hold the block as it was).
std::string describe_kept(const std::vector<PatternCheckContext>& kept) {
  std::ostringstream out;
  for (const auto& ctx : kept) {
    std::vector<std::string> lines;
    for (const auto& [var, users] : *ctx.var_usages) {
      std::string line = var->name_hint + ":";
      for (const auto& u : users) line += " " + u->name_hint;
      lines.push_back(line);
    }
    for (const auto& [value, var] : *ctx.value_to_bound_var)
      lines.push_back(var->name_hint + " = " + script::print_expr(value));
    std::sort(lines.begin(), lines.end());
    for (const auto& l : lines) out << l << "\n";
    out << "--\n";
  }
  return out.str();
}

TEST(PartitionDeferred, SameModuleAndCallsWithCheckFunctions) {
  std::mt19937 rng(4242);
  auto st = std::make_shared<CallbackState>();
  int changed_by_checks = 0, with_kept = 0;
  int totals_accepted[kNumKinds] = {}, totals_rejected[kNumKinds] = {};
  for (int iter = 0; iter < 600; ++iter) {
    auto R = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    GenOptions o;
    o.n_ops = iter % 10 == 0 ? R(40, 120) : R(1, 30);
    o.tuples = R(0, 2) == 0;
    o.extra_outputs = R(0, 3) == 0;
    o.consts = R(0, 3) == 0;
    o.tuple_out = R(0, 3) == 0;
    bool mixed = R(0, 2) != 0;
    auto gen = [&](const std::string& name, const GenOptions& g) {
      return mixed ? gen_mixed_function(rng, name, g) : gen_function(rng, name, g);
    };
    std::string text = "@I.ir_module\nclass Module:\n" + gen("main", o);
    bool two_functions = R(0, 4) == 0;
    if (two_functions) {
      GenOptions o2 = o;
      o2.n_ops = std::max(1, o.n_ops / 2);
      text += "\n" + gen("alt", o2);
    }
    IRModule before = script::parse_module(text);
    auto plain = gen_patterns(rng);
    auto patterns = plain;
    add_callbacks(patterns, rng, st);
    bool lift = R(0, 3) == 0;
    std::vector<std::string> entries;
    if (two_functions && R(0, 2) == 0) entries = {"main"};
    std::string what = "iteration " + std::to_string(iter) + "\n" + text;

    *st = CallbackState();
    IRModule ref = detail::fuse_patterns_one_by_one(patterns, before, lift, entries);
    CallbackState ref_state = std::move(*st);
    *st = CallbackState();
    auto deferred = detail::fuse_patterns_deferred(patterns, before, lift, entries);
    ASSERT_TRUE(deferred.has_value()) << what;
    expect_same(ref, *deferred, what);
    ASSERT_EQ(st->log.size(), ref_state.log.size()) << what;
    for (size_t k = 0; k < st->log.size(); ++k)
      ASSERT_EQ(st->log[k], ref_state.log[k]) << "call " << k << "\n" << what;
    EXPECT_EQ(st->errors, 0) << what;
    EXPECT_EQ(ref_state.errors, 0) << what;
    ASSERT_EQ(describe_kept(st->kept), describe_kept(ref_state.kept)) << what;
    with_kept += !st->kept.empty();
    for (int k = 0; k < kNumKinds; ++k) {
      totals_accepted[k] += st->accepted[k];
      totals_rejected[k] += st->rejected[k];
    }
    IRModule unchecked = detail::fuse_patterns_one_by_one(plain, before, lift, entries);
    if (script::print_module(unchecked) != script::print_module(ref)) ++changed_by_checks;
  }
  // The checks really decide: every kind both accepts and rejects, and they change the result.
  for (int k = 0; k < kNumKinds; ++k) {
    EXPECT_GT(totals_accepted[k], 0) << kind_name(k);
    EXPECT_GT(totals_rejected[k], 0) << kind_name(k);
  }
  EXPECT_GT(changed_by_checks, 150);
  EXPECT_GT(with_kept, 20);
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

    @R.function
    def alt(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            b: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
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
  FusionPattern checked = relu;
  std::vector<std::string> seen;
  checked.check = [&](const PatternCheckContext& ctx) {
    seen.push_back(ctx.value_to_bound_var->at(ctx.matched_expr)->name_hint);
    return true;
  };
  FusionPattern by_var = relu;
  by_var.pattern = is_op("relax.nn.relu")({dpl::is_dfv("a")});
  for (const auto& pat : {relu, checked, by_var})
    EXPECT_TRUE(detail::fuse_patterns_deferred({pat}, one_block, false, {}).has_value()) << pat.name;
  EXPECT_FALSE(detail::fuse_patterns_deferred({relu}, two_blocks, false, {}).has_value());
  // Check functions are called function by function in the order the entry functions are
  // listed: declined unless that is name order (the order blocks are partitioned in here).
  EXPECT_TRUE(detail::fuse_patterns_deferred({relu}, one_block, false, {"main", "alt"}).has_value());
  EXPECT_FALSE(detail::fuse_patterns_deferred({checked}, one_block, false, {"main", "alt"}).has_value());
  EXPECT_FALSE(detail::fuse_patterns_deferred({checked}, one_block, false, {"alt", "alt"}).has_value());
  seen.clear();
  EXPECT_TRUE(detail::fuse_patterns_deferred({checked}, one_block, false, {"alt", "main"}).has_value());
  EXPECT_EQ(seen, (std::vector<std::string>{"b", "b"}));
  // The public entry point gives the reference's result either way, with the same calls.
  for (const auto& mod : {one_block, two_blocks})
    for (const auto& pats : {std::vector<FusionPattern>{relu}, std::vector<FusionPattern>{checked},
                             std::vector<FusionPattern>{by_var}})
      for (const auto& entries : {std::vector<std::string>{}, std::vector<std::string>{"main"}}) {
        seen.clear();
        IRModule ref = detail::fuse_patterns_one_by_one(pats, mod, false, entries);
        auto ref_seen = seen;
        seen.clear();
        expect_same(ref, fuse_ops_by_pattern(pats, mod, true, false, entries), "public");
        EXPECT_EQ(seen, ref_seen);
      }
}

// A check that keeps its context finds the tables as the block was when it was called, after the
// pass changed the block.
TEST(PartitionDeferred, KeptContextKeepsTheBlock) {
  IRModule mod = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.exp(x)
            b: R.Tensor((4,), dtype="float32") = R.nn.relu(a)
            c: R.Tensor((4,), dtype="float32") = R.add(a, b)
            d: R.Tensor((4,), dtype="float32") = R.nn.relu(c)
            R.output(d)
        return d
)");
  FusionPattern exp_relu;
  exp_relu.name = "A.exp_relu";
  exp_relu.pattern = is_op("relax.nn.relu")({is_op("relax.exp")({wildcard()})});
  FusionPattern add;
  add.name = "A.add";
  add.pattern = is_op("relax.add")({wildcard(), wildcard()});
  std::vector<PatternCheckContext> kept;
  add.check = [&](const PatternCheckContext& ctx) {
    kept.push_back(ctx);
    return true;
  };
  for (int path = 0; path < 2; ++path) {
    kept.clear();
    IRModule out = path == 0 ? detail::fuse_patterns_one_by_one({exp_relu, add}, mod, false, {})
                             : *detail::fuse_patterns_deferred({exp_relu, add}, mod, false, {});
    ASSERT_EQ(kept.size(), 1u);
    // The add's block: a (an output of exp_relu's group, which kept it because c uses it), its
    // get-items, c and d. The add's arguments are the group's outputs now.
    EXPECT_EQ(describe_kept(kept),
              "c = R.add(lv1, lv2)\n"
              "c: d\n"
              "d = R.nn.relu(c)\n"
              "d:\n"
              "lv = fused_relax_exp_relax_nn_relu(x)\n"
              "lv1 = lv[0]\n"
              "lv1: c\n"
              "lv2 = lv[1]\n"
              "lv2: c\n"
              "lv: lv1 lv2\n"
              "--\n")
        << (path ? "deferred" : "reference");
  }
}

}  // namespace
}  // namespace partita::transform
