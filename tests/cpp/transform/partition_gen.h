// Random functions, pattern tables and callbacks for the FuseOpsByPattern tests.
//
// A function is a chain of element-wise / matmul / reduction / cast calls over three
// parameters, with tuples and get-items, aliases, constants, match_casts, values leaving the
// block, several dataflow blocks with plain bindings between them, and (mixed) values that
// differ in shape and dtype, so that checks looking at struct info decide differently.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "partita/dpl/pattern.h"
#include "partita/script/printer.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::transform::gen {

using dpl::is_op;
using dpl::Pattern;
using dpl::wildcard;

struct Options {
  int n_ops = 10;
  bool tuples = false;         // tuples and get-items of them
  bool extra_outputs = false;  // some values leave their block (non-dataflow vars)
  bool consts = false;         // constant operands
  bool tuple_out = false;      // the function also returns an intermediate value
  bool mixed = false;          // shapes (4, 4) / (1, 4), dtypes float32 / float16
  bool match_casts = false;    // some values are match_casts
  int blocks = 1;              // dataflow blocks (a plain binding may stand between two)
};

inline std::string type(bool row, bool f16) {
  return std::string("R.Tensor((") + (row ? "1, 4" : "4, 4") + "), dtype=\"" + (f16 ? "float16" : "float32") +
         "\")";
}

// One function `name`; see the file comment.
inline std::string gen_function(std::mt19937& rng, const std::string& name, const Options& o) {
  auto R = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  struct Value {
    std::string name;
    bool row, f16;
    int segment;  // -1: a parameter or a plain binding
  };
  struct Line {
    std::string text;
    int segment;  // -1: a plain binding between segments
  };
  std::vector<Value> pool{{"x0", false, false, -1}, {"x1", false, false, -1}, {"x2", o.mixed, false, -1}};
  std::vector<Line> lines;
  std::set<std::string> used, leaving;
  int segment = 0;
  int per_segment = std::max(1, o.n_ops / std::max(1, o.blocks));
  // A recent value (70%) or any, among those `ok` accepts; -1 when none. A value of an earlier
  // segment that is used here must leave its block.
  auto pick = [&](auto&& ok) -> int {
    std::vector<int> c;
    for (int i = 0; i < int(pool.size()); ++i)
      if (ok(pool[i])) c.push_back(i);
    if (c.empty()) return -1;
    int n = int(c.size());
    int back = R(0, 99) < 70 ? R(0, std::min(n - 1, 2)) : R(0, n - 1);
    const Value& v = pool[c[n - 1 - back]];
    used.insert(v.name);
    if (v.segment >= 0 && v.segment != segment) leaving.insert(v.name);
    return c[n - 1 - back];
  };
  auto any = [](const Value&) { return true; };
  static const char* binary[] = {"R.add", "R.multiply", "R.subtract"};
  for (int i = 0; i < o.n_ops; ++i) {
    if (i > 0 && i % per_segment == 0 && segment + 1 < o.blocks) {
      // A plain binding between two dataflow blocks (else the parser would join them).
      int next = segment + 1;
      segment = -1;
      Value a = pool[pick(any)];
      std::string p = "p" + std::to_string(i);
      lines.push_back(
          {"        " + p + ": " + type(a.row, a.f16) + " = R.nn.relu(" + a.name + ")\n", -1});
      pool.push_back({p, a.row, a.f16, -1});
      segment = next;
    }
    std::string v = "v" + std::to_string(i);
    Value a = pool[pick(any)];
    auto same_dtype = [&](const Value& x) { return x.f16 == a.f16; };
    int k = R(0, o.tuples ? 10 : 8);
    Value out{v, a.row, a.f16, segment};
    std::string value;
    if (o.match_casts && R(0, 9) == 0) {
      value = "R.match_cast(" + a.name + ", " + type(a.row, a.f16) + ")";
    } else if (o.mixed && R(0, 12) == 0) {
      value = a.name;  // an alias: a value bound more than once when repeated
    } else if (k <= 2) {
      if (o.consts && !a.f16 && !a.row && R(0, 4) == 0) {
        value = std::string(binary[k]) + "(" + a.name + ", R.const(1.5, \"float32\"))";
      } else {
        Value b = pool[pick(same_dtype)];
        out.row = a.row && b.row;
        value = std::string(binary[k]) + "(" + a.name + ", " + b.name + ")";
      }
    } else if (k == 3) {
      value = "R.nn.relu(" + a.name + ")";
    } else if (k == 4 || (k == 8 && !o.mixed)) {
      value = "R.exp(" + a.name + ")";
    } else if (k == 5) {
      int b = pick([&](const Value& x) { return x.f16 == a.f16 && !x.row; });
      value = b < 0 ? "R.nn.relu(" + a.name + ")"
                    : "R.matmul(" + a.name + ", " + pool[b].name + ", out_dtype=None)";
    } else if (k == 6 && o.mixed) {
      out.row = true;
      value = "R.sum(" + a.name + ", axis=[0], keepdims=True)";
    } else if ((k == 7 || k == 8) && o.mixed) {
      out.f16 = !a.f16;
      value = "R.astype(" + a.name + ", dtype=\"" + (out.f16 ? "float16" : "float32") + "\")";
    } else if (k >= 9) {
      Value b = pool[pick(any)];
      std::string t = "t" + std::to_string(i);
      lines.push_back({"            " + t + ": R.Tuple(" + type(a.row, a.f16) + ", " +
                           type(b.row, b.f16) + ") = (" + a.name + ", " + b.name + ")\n",
                       segment});
      int at = R(0, 1);
      out = at ? Value{v, b.row, b.f16, segment} : Value{v, a.row, a.f16, segment};
      value = t + "[" + std::to_string(at) + "]";
    } else {
      value = "R.nn.relu(" + a.name + ")";
    }
    lines.push_back(
        {"            " + v + ": " + type(out.row, out.f16) + " = " + value + "\n", segment});
    pool.push_back(out);
    if (o.extra_outputs && R(0, 7) == 0) leaving.insert(v);
  }
  std::vector<Value> outs;
  for (size_t i = 3; i < pool.size(); ++i)
    if (!used.count(pool[i].name)) outs.push_back(pool[i]);
  if (o.tuple_out && pool.size() > 4) outs.push_back(pool[3 + R(0, int(pool.size()) - 5)]);
  for (const auto& x : outs) leaving.insert(x.name);
  std::string ret = type(outs[0].row, outs[0].f16), result = outs[0].name, tail;
  if (outs.size() > 1) {
    ret = "R.Tuple(";
    std::string fields;
    for (size_t i = 0; i < outs.size(); ++i) {
      ret += (i ? ", " : "") + type(outs[i].row, outs[i].f16);
      fields += (i ? ", " : "") + outs[i].name;
    }
    ret += ")";
    tail = "        out: " + ret + " = (" + fields + ")\n";
    result = "out";
  }
  std::ostringstream m;
  m << "    @R.function\n    def " << name << "(x0: " << type(false, false)
    << ", x1: " << type(false, false) << ", x2: " << type(o.mixed, false) << ") -> " << ret
    << ":\n";
  // Each segment is a dataflow block whose values in `leaving` are its outputs.
  for (size_t at = 0; at < lines.size();) {
    if (lines[at].segment < 0) {
      m << lines[at++].text;
      continue;
    }
    int seg = lines[at].segment;
    std::string outputs;
    m << "        with R.dataflow():\n";
    for (; at < lines.size() && lines[at].segment == seg; ++at) {
      m << lines[at].text;
      std::string v = lines[at].text.substr(12, lines[at].text.find(':') - 12);
      if (leaving.count(v)) outputs += (outputs.empty() ? "" : ", ") + v;
    }
    m << "            R.output(" << outputs << ")\n";
  }
  m << tail << "        return " << result << "\n";
  return m.str();
}

// Patterns over values and variables, including Or, any-op calls, constants, get-items, a
// wildcard used twice, Not, dtype checks and variables made by earlier groups.
inline std::vector<FusionPattern> gen_patterns(std::mt19937& rng) {
  auto w = [] { return wildcard(); };
  std::vector<std::pair<std::string, std::function<Pattern()>>> pool{
      {"add",
       [&] {
         return is_op("relax.add")({w(), w()});
       }},
      {"mul",
       [&] {
         return is_op("relax.multiply")({w(), w()});
       }},
      {"relu", [&] { return is_op("relax.nn.relu")({w()}); }},
      {"exp", [&] { return is_op("relax.exp")({w()}); }},
      {"matmul",
       [&] {
         return is_op("relax.matmul")({w(), w()});
       }},
      {"add_relu",
       [&] {
         return is_op("relax.nn.relu")({is_op("relax.add")({w(), w()})});
       }},
      {"matmul_add",
       [&] {
         return is_op("relax.add")({is_op("relax.matmul")({w(), w()}), w()});
       }},
      {"exp_relu", [&] { return is_op("relax.exp")({is_op("relax.nn.relu")({w()})}); }},
      {"mul_sub",
       [&] {
         return is_op("relax.subtract")({is_op("relax.multiply")({w(), w()}), w()});
       }},
      {"mm_add_relu",
       [&] {
         return dpl::make_fused_bias_activation_pattern("relax.matmul", true, "relax.nn.relu");
       }},
      {"sub_exp_add",
       [&] {
         return is_op("relax.add")(
             {is_op("relax.exp")({is_op("relax.subtract")({w(), w()})}), w()});
       }},
      {"add_or_mul",
       [&] {
         return is_op("relax.add")({w(), w()}) | is_op("relax.multiply")({w(), w()});
       }},
      {"anycall",
       [&] {
         return dpl::make_call(w(), {w(), w()});
       }},
      {"add_const",
       [&] {
         return is_op("relax.add")({w(), dpl::is_const()});
       }},
      {"exp_tgi", [&] { return is_op("relax.exp")({dpl::is_tuple_get_item(w(), 0)}); }},
      {"relu_tgi",
       [&] {
         return is_op("relax.nn.relu")({dpl::is_tuple_get_item(dpl::is_tuple({w(), w()}))});
       }},
      {"add_same",
       [&] {
         Pattern x = w();
         return is_op("relax.add")({x, x});
       }},
      {"mul_not_add",
       [&] {
         return is_op("relax.multiply")({~is_op("relax.add")({w(), w()}), w()});
       }},
      {"call_gv", [&] { return dpl::make_call(dpl::is_gv(""), {w()}, true); }},
      {"relu_f32", [&] { return is_op("relax.nn.relu")({w().has_dtype("float32")}); }},
      {"relu_dfv", [&] { return is_op("relax.nn.relu")({dpl::is_dfv()}); }},
      {"add_lv",
       [&] {
         return is_op("relax.add")({dpl::is_dfv("lv"), w()});
       }},
      {"exp_x0", [&] { return is_op("relax.exp")({dpl::is_var("x0")}); }},
  };
  std::shuffle(pool.begin(), pool.end(), rng);
  int k = std::uniform_int_distribution<int>(1, 6)(rng);
  std::vector<FusionPattern> out;
  for (int i = 0; i < k; ++i) {
    FusionPattern p;
    p.name =
        std::string(std::uniform_int_distribution<int>(0, 1)(rng) ? "A." : "B.") + pool[i].first;
    p.pattern = pool[i].second();
    out.push_back(std::move(p));
  }
  if (std::uniform_int_distribution<int>(0, 7)(rng) == 0) out.push_back(out[0]);  // a pattern twice
  return out;
}

// ---- check functions and attribute getters -----------------------------------------------------

// What checks decide on: struct info, users of variables inside and outside the match, the order
// of users, the block's size as the earlier patterns left it, variables made by earlier groups,
// and the number of calls.
enum CheckKind {
  kNoLeak,           // has_leaking_intermediate_variables (var_usages of matched bindings)
  kFloat32,          // every matched value is float32
  kFullShape,        // the root's shape is (4, 4)
  kNoGroupArgs,      // no argument of the root is a variable an earlier group made (lv / gv)
  kSingleUser,       // the root's variable (value_to_bound_var) has at most one user
  kArgUsersEven,     // the arguments' variables have an even number of users in all
  kFirstUserIsRoot,  // the first user of the first argument bound in the block is the root
  kBlockSize,        // the block has a number of bindings not divisible by 3
  kEveryThirdCall,   // rejects every third call (the calls' order and number)
  kNumKinds
};
inline const char* kind_name(int k) {
  static const char* names[] = {
      "no_leak",         "float32",        "full_shape",         "no_group_args",
      "single_user",     "arg_users_even", "first_user_is_root", "block_size",
      "every_third_call"};
  return names[k];
}

// What a run of the callbacks saw and decided.
struct CallbackState {
  std::vector<std::string> log;
  int calls = 0;
  int errors = 0;  // inconsistent tables
  int accepted[kNumKinds] = {}, rejected[kNumKinds] = {};
  std::vector<std::pair<PatternCheckContext, std::string>> kept;  // kept contexts, as they read then
};

inline std::string name_of(const Expr& e) {
  if (auto* v = e.as<VarNode>()) return v->name_hint;
  if (!e) return "<null>";
  return "<" + script::print_expr(e) + ">";
}

inline Var bound_var(const PatternCheckContext& ctx, const Expr& value) {
  auto it = ctx.value_to_bound_var->find(value);
  return it == ctx.value_to_bound_var->end() ? Var() : it->second;
}

inline std::vector<Expr> args_of(const Expr& e) {
  if (auto* c = e.as<CallNode>()) return c->args;
  return {};
}

// Everything a check can see of its match, as text.
inline std::string describe(const PatternCheckContext& ctx) {
  std::ostringstream out;
  out << script::print_expr(ctx.matched_expr) << " : "
      << script::print_expr(ctx.matched_expr->struct_info_);
  out << " bound to " << name_of(bound_var(ctx, ctx.matched_expr)) << "; bindings";
  std::vector<std::string> bs;
  for (const auto& [var, value] : ctx.matched_bindings)
    bs.push_back(var->name_hint + (var.as<DataflowVarNode>() ? "" : "(out)") + " = " +
                 script::print_expr(value));
  std::sort(bs.begin(), bs.end());
  for (const auto& b : bs) out << " [" << b << "]";
  for (const auto& [name, e] : ctx.annotated_expr)
    out << "; " << name << " = " << script::print_expr(e);
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

// The tables of a context, as sorted text.
inline std::string describe_tables(const PatternCheckContext& ctx) {
  std::vector<std::string> lines;
  for (const auto& [var, users] : *ctx.var_usages) {
    std::string line = var->name_hint + ":";
    for (const auto& u : users) line += " " + u->name_hint;
    lines.push_back(line);
  }
  for (const auto& [value, var] : *ctx.value_to_bound_var)
    lines.push_back(var->name_hint + " = " + script::print_expr(value));
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

inline bool decide(int kind, const PatternCheckContext& ctx, CallbackState& st) {
  auto tensor = [](const Expr& e) { return e->struct_info_.as<TensorStructInfoNode>(); };
  switch (kind) {
    case kNoLeak: return !has_leaking_intermediate_variables(ctx);
    case kFloat32: {
      auto f32 = [&](const Expr& e) {
        return tensor(e) && tensor(e)->dtype == DataType::Float(32);
      };
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
          if (auto it = ctx.var_usages->find(Var(v)); it != ctx.var_usages->end())
            users += it->second.size();
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
inline void add_callbacks(std::vector<FusionPattern>& patterns, std::mt19937& rng,
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
        if (keep) st->kept.emplace_back(ctx, describe_tables(ctx));
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
        if (auto it = annotated.find("arg"); it != annotated.end())
          attrs["arg"] = name_of(it->second);
        if (auto it = annotated.find("root"); it != annotated.end())
          if (auto* t = it->second->struct_info_.as<TensorStructInfoNode>())
            attrs["ndim"] = int64_t(t->ndim);
        return attrs;
      };
    }
  }
}

}  // namespace partita::transform::gen
