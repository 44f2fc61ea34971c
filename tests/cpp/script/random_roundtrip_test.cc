// Randomized tests: generated well-formed modules survive print -> parse -> print with identical
// text and structural equality; random edits of printed text either parse or raise
// partita::Error (never crash or hang).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <unordered_map>

#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"

namespace partita::script {
namespace {

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  IRModule module() {
    IRModule mod = IRModule::create();
    int nfuncs = 1 + pick(2);
    std::vector<std::pair<GlobalVar, Function>> helpers;
    for (int f = 0; f < nfuncs; ++f) {
      std::string name = f + 1 == nfuncs ? "main" : "helper" + std::to_string(f);
      Function fn = function(name, f + 1 == nfuncs ? &helpers : nullptr, true);
      GlobalVar gv = make<GlobalVarNode>(name);
      gv->struct_info_ = fn->struct_info_;
      mod.add(gv, fn);
      helpers.emplace_back(gv, fn);
    }
    return mod;
  }

 private:
  int pick(int n) { return int(rng_() % uint32_t(n)); }
  bool coin(int percent) { return pick(100) < percent; }

  Expr constant(const StructInfo& like) {
    const auto* t = like.as<TensorStructInfoNode>();
    std::vector<int64_t> shape;
    for (const PrimExpr& d : *t->shape) {
      auto c = as_const_int(d);
      if (!c) return {};
      shape.push_back(*c);
    }
    Tensor data = Tensor::empty(shape, DataType::Float(32));
    for (int64_t i = 0; i < data.numel(); ++i) data.data_as<float>()[i] = float(pick(1000)) / 8.0f;
    Expr c = make<ConstantNode>(data);
    c->struct_info_ = tensor_sinfo(shape, DataType::Float(32));
    return c;
  }

  Expr scalar_constant() {
    Tensor data = Tensor::empty({}, DataType::Float(32));
    *data.data_as<float>() = float(pick(100)) / 4.0f - 5.0f;
    Expr c = make<ConstantNode>(data);
    c->struct_info_ = tensor_sinfo(std::vector<int64_t>{}, DataType::Float(32));
    return c;
  }

  Var fresh(const StructInfo& s, bool dataflow) {
    static const char* hints[] = {"lv", "gv", "x", "a", "lv1", "t", "y"};
    std::string h = hints[pick(7)];
    if (dataflow) return make<DataflowVarNode>(h, s);
    return make<VarNode>(h, s);
  }

  Call call(const std::string& op, std::vector<Expr> args) {
    Call c = op::make_call(op, std::move(args));
    c->struct_info_ = op::infer_struct_info(*c);
    return c;
  }

  /// Bindings computing values of struct info `type` from `pool` (all of that type).
  void bindings(std::vector<Binding>& out, std::vector<Expr>& pool, const StructInfo& type, bool dataflow,
                int count, std::vector<std::pair<GlobalVar, Function>>* helpers, int depth) {
    static const char* binary[] = {"relax.add", "relax.multiply", "relax.subtract"};
    for (int i = 0; i < count; ++i) {
      Expr a = pool[size_t(pick(int(pool.size())))];
      Expr b = pool[size_t(pick(int(pool.size())))];
      int kind = pick(10);
      Expr value;
      if (kind <= 3) {
        if (coin(15)) b = scalar_constant();
        else if (coin(10)) {
          Expr c = constant(type);
          if (c.defined()) b = c;
        }
        value = call(binary[pick(3)], {a, b});
      } else if (kind == 4 && coin(30)) {  // primitive values as arguments, as TVM prints clip's
        auto bound = [&](double v) {
          Expr e = make<PrimValueNode>(make<FloatImmNode>(v, DataType::Float(64)));
          e->struct_info_ = prim_sinfo(DataType::Float(64));
          return e;
        };
        value = call("relax.clip", {a, bound(-double(pick(8))), bound(double(pick(8)) / 2)});
      } else if (kind == 4 && coin(40) && dataflow) {  // a pure packed call inside a dataflow block
        Expr f = make<ExternFuncNode>("ext_" + std::to_string(pick(3)));
        f->struct_info_ = make<FuncStructInfoNode>(std::nullopt, object_sinfo(), false);
        Call c = make<CallNode>(op::get_op("relax.call_pure_packed"), std::vector<Expr>{f, a}, Attrs(),
                                std::vector<StructInfo>{type});
        c->struct_info_ = type;
        value = c;
      } else if (kind == 4) {
        value = call(coin(50) ? "relax.exp" : "relax.nn.relu", {a});
      } else if (kind == 5) {  // tuple and get item
        Expr tup = make<TupleNode>(std::vector<Expr>{a, b});
        tup->struct_info_ = tuple_sinfo({a->struct_info_, b->struct_info_});
        Var tv = fresh(tup->struct_info_, dataflow);
        out.push_back(make<VarBindingNode>(tv, tup));
        value = make<TupleGetItemNode>(tv, pick(2));
        value->struct_info_ = type;
      } else if (kind == 6) {  // match_cast to the same type
        Var mv = fresh(type, dataflow);
        out.push_back(make<MatchCastNode>(mv, a, type));
        pool.push_back(mv);
        continue;
      } else if (kind == 7 && depth == 0 && !dataflow) {  // nested function, called
        Function inner = local_function(type);
        Var fv = make<VarNode>(coin(50) ? "gv" : "local_func", inner->struct_info_);
        out.push_back(make<VarBindingNode>(fv, inner));
        value = make<CallNode>(fv, std::vector<Expr>{a});
        value->struct_info_ = type;  // the callee's own variables bound to the caller's
      } else if (kind == 8 && depth == 0 && !dataflow) {  // if/else
        Var cond = params_bool_;
        std::vector<Expr> p1{a, b}, p2{b, a};
        auto branch = [&](std::vector<Expr>& p) {
          std::vector<Binding> bb;
          bindings(bb, p, type, false, 1 + pick(2), nullptr, depth + 1);
          Expr res = make<SeqExprNode>(
              bb.empty() ? std::vector<BindingBlock>{} : std::vector<BindingBlock>{make<BindingBlockNode>(bb, false)},
              p.back());
          res->struct_info_ = type;
          return res;
        };
        Expr t = branch(p1), f = branch(p2);
        value = make<IfNode>(cond, t, f);
        value->struct_info_ = type;
      } else if (kind >= 8 && helpers && !helpers->empty() && !dataflow) {
        auto& [gv, fn] = (*helpers)[size_t(pick(int(helpers->size())))];
        if (!fn->params.empty() && fn->params.size() == 2 &&
            structural_equal(fn->params[0]->struct_info_, type) &&
            fn->params[1]->struct_info_.as<PrimStructInfoNode>() && fn->ret_struct_info.as<TensorStructInfoNode>()) {
          value = make<CallNode>(gv, std::vector<Expr>{a, params_bool_});
          value->struct_info_ = type;
        } else {
          value = call("relax.add", {a, b});
        }
      } else {
        value = call("relax.add", {a, b});
      }
      Var v = fresh(value->struct_info_, dataflow);
      out.push_back(make<VarBindingNode>(v, value));
      pool.push_back(v);
    }
  }

  /// `type` with its symbolic dimensions replaced by fresh variables of the same names: what a
  /// composite function extracted by FuseOpsByPattern declares as its own (`n_1` when printed).
  StructInfo with_own_vars(const StructInfo& type) {
    const auto* t = type.as<TensorStructInfoNode>();
    std::vector<PrimExpr> dims;
    std::unordered_map<const Object*, PrimExpr> fresh;
    for (const PrimExpr& d : *t->shape) {
      if (const auto* v = d.as<PrimVarNode>()) {
        auto [it, added] = fresh.emplace(v, PrimExpr());
        if (added) it->second = make<PrimVarNode>(v->name, v->dtype);
        dims.push_back(it->second);
      } else {
        dims.push_back(d);
      }
    }
    return tensor_sinfo(dims, t->dtype);
  }

  Function local_function(const StructInfo& outer_type) {
    StructInfo type = coin(80) ? with_own_vars(outer_type) : outer_type;
    Var p = make<VarNode>(coin(50) ? "x" : "lv", type);
    std::vector<Expr> pool{p};
    std::vector<Binding> bb;
    bindings(bb, pool, type, true, 1 + pick(3), nullptr, 1);
    Var out = make<VarNode>("gv", type);
    bb.push_back(make<VarBindingNode>(out, pool.back()));
    Expr body = make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(bb, true)}, out);
    body->struct_info_ = type;
    DictAttrs attrs{{"Composite", std::string("test.pattern")}};
    Function f = make<FunctionNode>(std::vector<Var>{p}, body, type, true, attrs);
    f->struct_info_ = make<FuncStructInfoNode>(std::vector<StructInfo>{type}, type, true);
    return f;
  }

  Function function(const std::string& name, std::vector<std::pair<GlobalVar, Function>>* helpers, bool) {
    // Functions of one module share the layout of their tensor type so that they can call each
    // other; symbolic variables are per function.
    if (module_dims_.empty()) {
      sym_name_ = coin(40) ? (coin(50) ? "n" : "m") : "";
      int nd = 1 + pick(3);
      for (int i = 0; i < nd; ++i) module_dims_.push_back(!sym_name_.empty() && coin(40) ? -1 : 1 + pick(8));
    }
    sym_.clear();
    PrimVar sv = make<PrimVarNode>(sym_name_.empty() ? "n" : sym_name_);
    std::vector<PrimExpr> shape;
    for (int64_t d : module_dims_) shape.push_back(d < 0 ? PrimExpr(sv) : int_imm(d));
    StructInfo type = tensor_sinfo(shape, DataType::Float(32));
    Var x = make<VarNode>("x", type);
    params_bool_ = make<VarNode>("cond", prim_sinfo(DataType::Bool()));
    std::vector<Expr> pool{x};
    std::vector<BindingBlock> blocks;
    std::vector<Binding> plain;
    bindings(plain, pool, type, false, pick(3), helpers, 0);
    if (!plain.empty()) blocks.push_back(make<BindingBlockNode>(plain, false));
    std::vector<Binding> df;
    bindings(df, pool, type, true, 1 + pick(5), helpers, 0);
    Var out = make<VarNode>("gv", type);
    df.push_back(make<VarBindingNode>(out, pool.back()));
    blocks.push_back(make<BindingBlockNode>(df, true));
    Expr ret = out;
    StructInfo ret_type = type;
    if (coin(30)) {
      ret = make<TupleNode>(std::vector<Expr>{out, x});
      ret_type = tuple_sinfo({type, type});
      ret->struct_info_ = ret_type;
    }
    Expr body = make<SeqExprNode>(blocks, ret);
    body->struct_info_ = ret_type;
    DictAttrs attrs;
    if (coin(70)) attrs["global_symbol"] = name;
    if (coin(30)) attrs["Primitive"] = int64_t(1);
    Function f = make<FunctionNode>(std::vector<Var>{x, params_bool_}, body, ret_type, true, attrs);
    f->struct_info_ = make<FuncStructInfoNode>(std::vector<StructInfo>{type, params_bool_->struct_info_}, ret_type, true);
    return f;
  }

  std::mt19937 rng_;
  std::vector<PrimExpr> sym_;
  Var params_bool_;
  std::vector<int64_t> module_dims_;
  std::string sym_name_;
};

// What the generator must keep writing (each in more than 10 of the 1,000 modules).
const char* const kConstructs[] = {"metadata[", "R.const(", "        if ", "R.match_cast", "T.int64()",
                                   "\n        @R.function", "cls.helper", "[1]", "private=True",
                                   "T.float64(", "R.call_pure_packed(", "            n_1 = T.int64()"};

TEST(RandomRoundTrip, ThousandModules) {
  int failures = 0;
  std::map<std::string, int> seen;  // the generator must cover every construct
  for (uint32_t seed = 0; seed < 1000 && failures < 3; ++seed) {
    IRModule mod = Generator(seed).module();
    std::string text = print_module(mod);
    for (const char* construct : kConstructs)
      if (text.find(construct) != std::string::npos) ++seen[construct];
    IRModule parsed;
    try {
      parsed = parse_module(text);
    } catch (const Error& e) {
      ADD_FAILURE() << "seed " << seed << ": " << e.what() << "\n" << text;
      ++failures;
      continue;
    }
    std::string again = print_module(parsed);
    if (again != text) {
      ADD_FAILURE() << "seed " << seed << ": text differs\n--- first\n" << text << "\n--- second\n" << again;
      ++failures;
      continue;
    }
    auto diff = structural_diff(mod, parsed);
    if (diff) {
      ADD_FAILURE() << "seed " << seed << ": " << *diff << "\n" << text;
      ++failures;
    }
  }
  for (const char* construct : kConstructs) EXPECT_GT(seen[construct], 10) << construct;
}

TEST(MutationFuzz, EditsParseOrRaise) {
  std::mt19937 rng(1234);
  const char alphabet[] = "()[]{}:,.=@#\"' \n\t-+*/%01234567899abcRTIxyz_";
  int parsed = 0, rejected = 0;
  for (uint32_t seed = 0; seed < 60; ++seed) {
    std::string base = print_module(Generator(seed).module());
    for (int k = 0; k < 40; ++k) {
      std::string text = base;
      int edits = 1 + int(rng() % 3);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        size_t pos = rng() % text.size();
        switch (rng() % 4) {
          case 0: text[pos] = alphabet[rng() % (sizeof(alphabet) - 1)]; break;
          case 1: text.erase(pos, 1 + rng() % 8); break;
          case 2: text.insert(pos, 1, alphabet[rng() % (sizeof(alphabet) - 1)]); break;
          case 3: text.resize(pos); break;
        }
      }
      IRModule m;
      try {
        m = parse_module(text);
      } catch (const Error&) {
        ++rejected;  // a clear error is the right answer to most edits
        continue;
      }
      ++parsed;
      // What the parser accepts is a well-formed module whose printed text is a fixed point.
      EXPECT_TRUE(well_formed(m)) << "seed " << seed << " edit " << k << ":\n" << text;
      std::string printed = print_module(m);
      EXPECT_EQ(print_module(parse_module(printed)), printed) << "seed " << seed << " edit " << k;
    }
  }
  // Both outcomes occur, so the edits neither always break nor never break the text.
  EXPECT_GT(rejected, 0);
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace partita::script
