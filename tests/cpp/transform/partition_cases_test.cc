// FuseOpsByPattern on inputs beyond one plain dataflow block, each with its expected result:
// several dataflow blocks with plain bindings between them, match_cast, nested call values,
// composites calling composites, entry functions listed in any order or twice, a Primitive entry
// function, and what check functions see and keep.
#include <gtest/gtest.h>

#include "partita/dpl/pattern.h"
#include "partita/ir/analysis.h"
#include "partita/op/registry.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::transform {
namespace {

using dpl::is_op;
using dpl::wildcard;

FusionPattern fp(std::string name, dpl::Pattern p) {
  FusionPattern f;
  f.name = std::move(name);
  f.pattern = std::move(p);
  return f;
}

const FusionPattern kExpRelu =
    fp("A.exp_relu", is_op("relax.nn.relu")({is_op("relax.exp")({wildcard()})}));
const FusionPattern kReluExp =
    fp("A.relu_exp", is_op("relax.exp")({is_op("relax.nn.relu")({wildcard()})}));
const FusionPattern kExp = fp("A.exp", is_op("relax.exp")({wildcard()}));
const FusionPattern kRelu = fp("A.relu", is_op("relax.nn.relu")({wildcard()}));
const FusionPattern kAdd = fp("A.add", is_op("relax.add")({wildcard(), wildcard()}));

// The printed module without the two import comment lines and the blank line after them.
std::string text_of(const IRModule& mod) {
  std::string s = script::print_module(mod);
  for (int i = 0; i < 3; ++i) s = s.substr(s.find('\n') + 1);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

const char* kExpReluModule = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.exp(x)
            b: R.Tensor((4,), dtype="float32") = R.nn.relu(a)
            R.output(b)
        return b
)";

// A group's output leaves its block: the plain binding after it and the next block use the
// group's variable, and the same composite serves both blocks.
TEST(PartitionCases, SeveralDataflowBlocks) {
  IRModule before = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.exp(x)
            b: R.Tensor((4,), dtype="float32") = R.nn.relu(a)
            R.output(b)
        c: R.Tensor((4,), dtype="float32") = R.nn.relu(b)
        with R.dataflow():
            d: R.Tensor((4,), dtype="float32") = R.exp(c)
            e: R.Tensor((4,), dtype="float32") = R.nn.relu(d)
            f: R.Tensor((4,), dtype="float32") = R.add(b, e)
            R.output(f)
        return f
)");
  IRModule after = fuse_ops_by_pattern({kExpRelu, kAdd}, before);
  EXPECT_TRUE(well_formed(after));
  EXPECT_EQ(text_of(after), R"(@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_add(gv: R.Tensor((4,), dtype="float32"), lv: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "A.add", "Primitive": True})
        with R.dataflow():
            gv_1: R.Tensor((4,), dtype="float32") = R.add(gv, lv)
            R.output(gv_1)
        return gv_1

    @R.function(private=True)
    def fused_relax_exp_relax_nn_relu(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "A.exp_relu", "Primitive": True})
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.exp(x)
            gv: R.Tensor((4,), dtype="float32") = R.nn.relu(a)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = cls.fused_relax_exp_relax_nn_relu(x)
            R.output(gv)
        c: R.Tensor((4,), dtype="float32") = R.nn.relu(gv)
        with R.dataflow():
            lv: R.Tensor((4,), dtype="float32") = cls.fused_relax_exp_relax_nn_relu(c)
            gv_1: R.Tensor((4,), dtype="float32") = cls.fused_relax_add(gv, lv)
            R.output(gv_1)
        return gv_1)");
}

// A match_cast is never part of a group (the matcher does not look through it), but its value
// follows the group that absorbed it.
TEST(PartitionCases, MatchCast) {
  IRModule before = script::parse_module(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.exp(x)
            b: R.Tensor((4,), dtype="float32") = R.match_cast(a, R.Tensor((4,), dtype="float32"))
            c: R.Tensor((4,), dtype="float32") = R.nn.relu(b)
            d: R.Tensor((4,), dtype="float32") = R.exp(c)
            R.output(d)
        return d
)");
  IRModule after = fuse_ops_by_pattern({kReluExp, kExp}, before);
  EXPECT_TRUE(well_formed(after));
  EXPECT_EQ(text_of(after), R"(@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_exp(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "A.exp", "Primitive": True})
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = R.exp(x)
            R.output(gv)
        return gv

    @R.function(private=True)
    def fused_relax_nn_relu_relax_exp(b: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "A.relu_exp", "Primitive": True})
        with R.dataflow():
            c: R.Tensor((4,), dtype="float32") = R.nn.relu(b)
            gv: R.Tensor((4,), dtype="float32") = R.exp(c)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv: R.Tensor((4,), dtype="float32") = cls.fused_relax_exp(x)
            b: R.Tensor((4,), dtype="float32") = R.match_cast(lv, R.Tensor((4,), dtype="float32"))
            gv: R.Tensor((4,), dtype="float32") = cls.fused_relax_nn_relu_relax_exp(b)
            R.output(gv)
        return gv)");
}

// A call nested in another's arguments (a module built without normalizing) is no binding of
// the block: a pattern reaching it does not match, and it is passed to a group as an argument.
TEST(PartitionCases, NestedCallValue) {
  Var x = make<VarNode>("x", tensor_sinfo(std::vector<int64_t>{4}, DataType::Float(32)));
  auto call = [](const std::string& op, const Expr& arg) {
    Call c = op::make_call(op, {arg});
    c->struct_info_ = op::infer_struct_info(*c);
    return c;
  };
  Call nested = call("relax.nn.relu", call("relax.exp", x));
  Var v = make<DataflowVarNode>("v", nested->struct_info_);
  Var o = make<VarNode>("o", nested->struct_info_);
  std::vector<Binding> bs{make<VarBindingNode>(v, nested), make<VarBindingNode>(o, call("relax.nn.relu", v))};
  Expr body =
      make<SeqExprNode>(std::vector<BindingBlock>{make<BindingBlockNode>(std::move(bs), true)}, o);
  body->struct_info_ = o->struct_info_;
  Function f = make<FunctionNode>(std::vector<Var>{x}, body, o->struct_info_, true,
                                  DictAttrs{{"global_symbol", std::string("main")}});
  f->struct_info_ = func_struct_info_of(*f);
  IRModule before = IRModule::create();
  before.add(make<GlobalVarNode>("main"), f);
  EXPECT_EQ(text_of(fuse_ops_by_pattern({kExpRelu, kRelu}, before)), R"(@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_nn_relu(param_0: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "A.relu", "Primitive": True})
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = R.nn.relu(param_0)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            lv: R.Tensor((4,), dtype="float32") = cls.fused_relax_nn_relu(R.exp(x))
            gv: R.Tensor((4,), dtype="float32") = cls.fused_relax_nn_relu(lv)
            R.output(gv)
        return gv)");
}

// A composite that calls another (a pattern matched the call of an earlier composite) calls the
// other's codegen function once annotated, as every other caller does.
TEST(PartitionCases, CompositeCallingACompositeIsAnnotated) {
  FusionPattern call_exp = fp(
      "B.call_exp", is_op("relax.nn.relu")({dpl::make_call(dpl::is_gv(""), {wildcard()}, true)}));
  IRModule after =
      fuse_ops_by_pattern({kExp, call_exp}, script::parse_module(kExpReluModule), true, true);
  EXPECT_TRUE(well_formed(after));
  EXPECT_EQ(text_of(after), R"(@I.ir_module
class Module:
    @R.function
    def fused_relax_exp_A(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Codegen": "A"})
        # from partita.script import relax as R
        
        @R.function
        def local_func(x_1: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
            R.func_attr({"Composite": "A.exp"})
            with R.dataflow():
                gv: R.Tensor((4,), dtype="float32") = R.exp(x_1)
                R.output(gv)
            return gv

        output: R.Tensor((4,), dtype="float32") = local_func(x)
        return output

    @R.function
    def fused_relax_exp_relax_nn_relu_B(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Codegen": "B"})
        # from partita.script import relax as R
        
        @R.function
        def local_func(x_1: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
            R.func_attr({"Composite": "B.call_exp"})
            cls = Module
            with R.dataflow():
                lv: R.Tensor((4,), dtype="float32") = cls.fused_relax_exp_A(x_1)
                gv: R.Tensor((4,), dtype="float32") = R.nn.relu(lv)
                R.output(gv)
            return gv

        output: R.Tensor((4,), dtype="float32") = local_func(x)
        return output

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = cls.fused_relax_exp_relax_nn_relu_B(x)
            R.output(gv)
        return gv)");
}

// An entry function that is itself Primitive takes part in sharing functions as each pattern
// leaves it: main's group after A.relu is structurally prim after A.relu, so main calls prim (a
// check keeps prim's own block from matching A.mix).
TEST(PartitionCases, PrimitiveEntryFunctionAsThePatternsLeaveIt) {
  IRModule before = script::parse_module(std::string(kExpReluModule) + R"(
    @R.function(private=True)
    def prim(y: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "A.mix", "Primitive": True})
        with R.dataflow():
            p: R.Tensor((4,), dtype="float32") = R.exp(y)
            q: R.Tensor((4,), dtype="float32") = R.nn.relu(p)
            R.output(q)
        return q
)");
  FusionPattern mix =
      fp("A.mix", dpl::make_call(dpl::is_gv(""), {is_op("relax.exp")({wildcard()})}, true));
  mix.check = [](const PatternCheckContext& ctx) {
    auto* arg = ctx.matched_expr.as<CallNode>()->args[0].as<VarNode>();
    return !(arg && arg->name_hint == "p");
  };
  IRModule after = fuse_ops_by_pattern({kRelu, mix}, before, true, false, {"main", "prim"});
  EXPECT_EQ(text_of(after), R"(@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_nn_relu(a: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "A.relu", "Primitive": True})
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = R.nn.relu(a)
            R.output(gv)
        return gv

    @R.function(private=True)
    def prim(y: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "A.mix", "Primitive": True})
        cls = Module
        with R.dataflow():
            p: R.Tensor((4,), dtype="float32") = R.exp(y)
            gv1: R.Tensor((4,), dtype="float32") = cls.fused_relax_nn_relu(p)
            R.output(gv1)
        return gv1

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = cls.prim(x)
            R.output(gv)
        return gv)");
}

const char* kTwoFunctions = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            m: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
            R.output(m)
        return m

    @R.function
    def alt(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
            R.output(a)
        return a
)";

// Checks are called function by function in the order the entry functions are listed (a
// function listed twice, twice); by default in name order.
TEST(PartitionCases, ChecksFollowTheListedEntryFunctions) {
  IRModule mod = script::parse_module(kTwoFunctions);
  std::vector<std::string> seen;
  FusionPattern relu = kRelu;
  relu.check = [&](const PatternCheckContext& ctx) {
    seen.push_back(ctx.value_to_bound_var->at(ctx.matched_expr)->name_hint);
    return true;
  };
  for (const auto& [entries, order] :
       std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>{
           {{}, {"a", "m"}},
           {{"main", "alt"}, {"m", "a"}},
           {{"alt", "main"}, {"a", "m"}},
           {{"main", "main"}, {"m", "m"}}}) {
    seen.clear();
    IRModule after = fuse_ops_by_pattern({relu}, mod, true, false, entries);
    EXPECT_EQ(seen, order);
    EXPECT_TRUE(after.contains("fused_relax_nn_relu"));
  }
}

// A function listed twice keeps the groups of the last partitioning that found any.
TEST(PartitionCases, FunctionListedTwiceKeepsTheLastGroupsFound) {
  IRModule mod = script::parse_module(kTwoFunctions);
  for (bool accept_first : {true, false}) {
    int calls = 0;
    FusionPattern relu = kRelu;
    relu.check = [&](const PatternCheckContext&) { return (calls++ == 0) == accept_first; };
    IRModule after = fuse_ops_by_pattern({relu}, mod, true, false, {"main", "main"});
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(text_of(after), R"(@I.ir_module
class Module:
    @R.function
    def alt(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
            R.output(a)
        return a

    @R.function(private=True)
    def fused_relax_nn_relu(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        R.func_attr({"Composite": "A.relu", "Primitive": True})
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
            R.output(gv)
        return gv

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv: R.Tensor((4,), dtype="float32") = cls.fused_relax_nn_relu(x)
            R.output(gv)
        return gv)");
  }
}

// A check that keeps its context finds the tables as the block was when it was called, after the
// pass changed the block.
TEST(PartitionCases, KeptContextKeepsTheBlock) {
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
  FusionPattern add = kAdd;
  std::vector<PatternCheckContext> kept;
  add.check = [&](const PatternCheckContext& ctx) {
    kept.push_back(ctx);
    return true;
  };
  FusionPattern exp_relu = kExpRelu;
  fuse_ops_by_pattern({exp_relu, add}, mod, false);
  ASSERT_EQ(kept.size(), 1u);
  std::vector<std::string> lines;
  for (const auto& [var, users] : *kept[0].var_usages) {
    std::string line = var->name_hint + ":";
    for (const auto& u : users) line += " " + u->name_hint;
    lines.push_back(line);
  }
  for (const auto& [value, var] : *kept[0].value_to_bound_var)
    lines.push_back(var->name_hint + " = " + script::print_expr(value));
  std::sort(lines.begin(), lines.end());
  // The add's block: exp_relu's group (which kept `a` as an output, since c uses it), its
  // get-items, c and d. The add's arguments are the group's outputs now.
  EXPECT_EQ(lines,
            (std::vector<std::string>{"c = R.add(lv1, lv2)", "c: d", "d = R.nn.relu(c)",
                                      "d:", "lv = fused_relax_exp_relax_nn_relu(x)", "lv1 = lv[0]",
                                      "lv1: c", "lv2 = lv[1]", "lv2: c", "lv: lv1 lv2"}));
}

}  // namespace
}  // namespace partita::transform
