// The TVMScript forms TVM writes that the parser must take and the printer must give back:
// struct-info short forms, primitive values as arguments, packed calls, extern functions with
// struct info, module attributes, TVM 0.27's TypeVar declarations, symbolic variables scoped per
// function, and located errors for each.
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"
#include "../merged_symbolic_module.h"
#include "test_util.h"

namespace partita::script {
namespace {

const char* kHeader =
    "# from partita.script import ir as I\n"
    "# from partita.script import tir as T\n"
    "# from partita.script import relax as R\n\n";

const char* kRelaxHeader =
    "# from partita.script import ir as I\n"
    "# from partita.script import relax as R\n\n";

/// The text parses and prints back line for line, and the parse of the printed text is
/// structurally equal to the first parse.
IRModule expect_round_trip(const std::string& text) {
  IRModule mod = parse_module(text);
  std::string printed = print_module(mod);
  EXPECT_EQ(testing::normalized_lines(printed), testing::normalized_lines(text)) << printed;
  IRModule again = parse_module(printed);
  auto diff = structural_diff(mod, again);
  EXPECT_FALSE(diff) << *diff;
  return mod;
}

const FunctionNode* function(const IRModule& mod, const std::string& name) {
  return mod.lookup(name).as<FunctionNode>();
}

std::string error_of(const std::string& text) {
  try {
    parse_module(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TvmForms, PrimShortFormAndAnyAreTheLongForms) {
  // TVM >= 0.26 writes R.Prim("float32") as T.float32, R.Object as R.Any, and the purity of a
  // callable as a third positional argument; all mean what the older long forms mean, and
  // Partita prints them as v0.26 does.
  IRModule mod = parse_module(std::string(kHeader) + R"(@I.ir_module
class Module:
    @R.function
    def main(s: T.float32, b: T.bool, o: R.Any, t: R.Tuple(R.Any, R.Tuple(T.int64, R.Shape(ndim=3))), f: R.Callable((T.float32,), R.Any, True), g: R.Callable((R.Tensor(ndim=2),), R.Tensor(ndim=2), False), h: R.Callable(ret=T.int32, purity=False)) -> R.Any:
        return s
)");
  const FunctionNode* main = function(mod, "main");
  ASSERT_EQ(main->params.size(), 7u);
  auto sinfo = [&](size_t i) { return main->params[i]->struct_info_; };
  EXPECT_TRUE(structural_equal(sinfo(0), prim_sinfo(DataType::Float(32))));
  EXPECT_TRUE(structural_equal(sinfo(1), prim_sinfo(DataType::Bool())));
  EXPECT_TRUE(structural_equal(sinfo(2), object_sinfo()));
  EXPECT_TRUE(structural_equal(
      sinfo(3), tuple_sinfo({object_sinfo(), tuple_sinfo({prim_sinfo(DataType::Int(64)), make<ShapeStructInfoNode>(3)})})));
  EXPECT_TRUE(structural_equal(
      sinfo(4), make<FuncStructInfoNode>(std::vector<StructInfo>{prim_sinfo(DataType::Float(32))}, object_sinfo(), true)));
  EXPECT_FALSE(sinfo(5).as<FuncStructInfoNode>()->purity);
  EXPECT_TRUE(structural_equal(sinfo(6), make<FuncStructInfoNode>(std::nullopt, prim_sinfo(DataType::Int(32)), false)));
  // Printed as v0.26 prints them (an impure opaque callable says nothing of its purity).
  std::string printed = print_module(mod);
  EXPECT_NE(printed.find("def main(s: T.float32, b: T.bool, o: R.Any, t: R.Tuple(R.Any, R.Tuple(T.int64, "
                         "R.Shape(ndim=3))), f: R.Callable((T.float32,), R.Any, True), "
                         "g: R.Callable((R.Tensor(ndim=2),), R.Tensor(ndim=2), False), "
                         "h: R.Callable(ret=T.int32)) -> R.Any:"),
            std::string::npos)
      << printed;
  expect_round_trip(printed);
  // The older spellings mean the same module.
  IRModule old = parse_module(std::string(kHeader) + R"(@I.ir_module
class Module:
    @R.function
    def main(s: R.Prim("float32"), b: R.Prim("bool"), o: R.Object, t: R.Tuple(R.Object, R.Tuple(R.Prim("int64"), R.Shape(ndim=3))), f: R.Callable((R.Prim("float32"),), R.Object), g: R.Callable((R.Tensor(ndim=2),), R.Tensor(ndim=2), purity=False), h: R.Callable(ret=R.Prim("int32"), purity=False)) -> R.Object:
        return s
)");
  EXPECT_TRUE(structural_equal(old, mod));
}

TEST(TvmForms, EveryStructInfoFormRoundTrips) {
  expect_round_trip(std::string(kHeader) + R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), p: R.Prim(value="m"), q: T.float16, s: R.Shape(["n", "m + 1"]), s2: R.Shape(ndim=2), s3: R.Shape(ndim=-1), t: R.Tensor(ndim=3), t2: R.Tensor(dtype="int8"), t3: R.Tensor, u: R.Tuple(R.Tensor((2,), dtype="int32"), R.Tuple(R.Any, R.Tuple)), f: R.Callable((R.Tensor(("n",), dtype="float32"),), R.Tuple(R.Any, T.bool), True), g: R.Callable, g2: R.Callable(ret=R.Tensor(ndim=2), purity=True), o: R.Any) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        m = T.int64()
        return x
)");
}

TEST(TvmForms, PrimitiveValuesInAnyArgumentPosition) {
  IRModule mod = expect_round_trip(std::string(kHeader) + R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), s: T.float32) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        y: R.Tensor((n, 4), dtype="float32") = R.clip(x, T.float64(-1.0), T.float64(1.0))
        a: T.int64 = 3
        b: T.float32 = T.float32(2.5)
        c: T.bool = True
        d: R.Prim(value=n * 2) = n * 2
        e: R.Tuple(T.int64, T.int32, R.Shape([n, 3]), R.Any, R.Any) = -4, T.int32(7), R.shape([n, 3]), R.str("hi"), R.dtype("float16")
        return y
)");
  const FunctionNode* main = function(mod, "main");
  const auto& bindings = main->body.as<SeqExprNode>()->blocks[0]->bindings;
  const auto* clip = binding_value(*bindings[0]).as<CallNode>();
  ASSERT_TRUE(clip);
  const auto* lo = clip->args[1].as<PrimValueNode>();
  ASSERT_TRUE(lo);
  ASSERT_TRUE(lo->value.as<FloatImmNode>());
  EXPECT_EQ(lo->value.as<FloatImmNode>()->value, -1.0);
  EXPECT_EQ(lo->value->dtype, DataType::Float(64));
  EXPECT_TRUE(well_formed(mod));
  // A bare symbolic variable is the PrimValue of that variable.
  const auto* d = binding_value(*bindings[4]).as<PrimValueNode>();
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->value.as<PrimBinaryNode>());
}

TEST(TvmForms, PackedCallsAndExternFunctions) {
  IRModule mod = expect_round_trip(std::string(kHeader) + R"(@I.ir_module
class Module:
    ext = R.ExternFunc("my_ext", R.Callable((R.Tensor(ndim=2),), R.Tensor(dtype="float32", ndim=2), True))
    plain = R.ExternFunc("plain")
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            y: R.Tensor((n, 4), dtype="float32") = R.call_pure_packed("my_add", x, n, R.str("hi"), ty_args=(R.Tensor((n, 4), dtype="float32"),))
            R.output(y)
        z: R.Any = R.call_packed("side_effect", y, 3, ty_args=(R.Any,))
        return y
)");
  EXPECT_TRUE(well_formed(mod));
  EXPECT_TRUE(mod.lookup("ext")->struct_info_.as<FuncStructInfoNode>()->purity);
  EXPECT_FALSE(mod.lookup("plain")->struct_info_.as<FuncStructInfoNode>()->purity);
  // TVM >= 0.26 spells sinfo_args `ty_args`; the older name (and a single struct info) is read too.
  IRModule old = parse_module(std::string(kHeader) + R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        y: R.Tensor((2,), dtype="float32") = R.call_pure_packed("my_add", x, sinfo_args=(R.Tensor((2,), dtype="float32"),))
        z: R.Object = R.call_packed("side_effect", y, sinfo_args=R.Object)
        return y
)");
  std::string printed = print_module(old);
  EXPECT_NE(printed.find("R.call_pure_packed(\"my_add\", x, ty_args=(R.Tensor((2,), dtype=\"float32\"),))"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("R.call_packed(\"side_effect\", y, ty_args=(R.Any,))"), std::string::npos) << printed;
}

TEST(TvmForms, ModuleAttributes) {
  IRModule mod = expect_round_trip(R"(# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    I.module_attrs({"flag": True, "opt_level": 3, "scale": 0.5, "system_lib_prefix": "lib_"})
    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        return x
)");
  ASSERT_EQ(mod->attrs.size(), 4u);
  EXPECT_EQ(mod->attrs.at("opt_level").as<IntImmNode>()->value, 3);
  EXPECT_EQ(mod->attrs.at("system_lib_prefix").as<StringImmNode>()->value, "lib_");
  // Module attributes and global infos together, attributes first.
  expect_round_trip(R"(# from partita.script import ir as I
# from partita.script import relax as R

@I.ir_module
class Module:
    I.module_attrs({"a": 1})
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "mtriple": "x86_64-linux-gnu", "tag": ""}, 0, "global")]})
    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        return x
)");
}

// A Codegen function `name` holding a composite: the symbolic variables each function declares
// (the outer n, the inner n_1), as Partita prints them.
std::string scoped_symbolic_module(const std::string& name) {
  return std::string(kHeader) + R"(@I.ir_module
class Module:
    @R.function
    def )" + name + R"((x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        R.func_attr({"Codegen": "cutlass"})
        # from partita.script import tir as T
        # from partita.script import relax as R

        @R.function
        def gv(x_1: R.Tensor(("n_1", 4), dtype="float32")) -> R.Tensor(("n_1", 4), dtype="float32"):
            n_1 = T.int64()
            R.func_attr({"Composite": "cutlass.relu"})
            with R.dataflow():
                a: R.Tensor((n_1, 4), dtype="float32") = R.nn.relu(x_1)
                R.output(a)
            return a

        y: R.Tensor((n, 4), dtype="float32") = gv(x)
        return y
)";
}

TEST(TvmForms, TypeVarDeclarationsOfTvm027) {
  // TVM 0.27 declares signature variables as `n = TypeVar("n")` before the function and writes
  // them bare in the signature; they parse as the v0.26 text's "n" strings do.
  IRModule mod = parse_module(R"(# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import relax as R

n = TypeVar("n")
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((n, 4), dtype="float32")) -> R.Tensor((n, 4), dtype="float32"):
        R.func_attr({"Codegen": "cutlass"})
        # from typing import TypeVar
        # from tvm.script import relax as R

        n_1 = TypeVar("n_1")
        @R.function
        def gv(x_1: R.Tensor((n_1, 4), dtype="float32")) -> R.Tensor((n_1, 4), dtype="float32"):
            R.func_attr({"Composite": "cutlass.relu"})
            with R.dataflow():
                a: R.Tensor((n_1, 4), dtype="float32") = R.nn.relu(x_1)
                R.output(a)
            return a

        y: R.Tensor((n, 4), dtype="float32") = gv(x)
        return y
)");
  EXPECT_TRUE(well_formed(mod));
  EXPECT_EQ(testing::normalized_lines(print_module(mod)), testing::normalized_lines(scoped_symbolic_module("main")));
}

TEST(TvmForms, SymbolicVariablesAreScopedPerFunction) {
  // Each function declares the symbolic variables it introduces as its first statements, before
  // R.func_attr; the inner function's n_1 is its own, not the outer function's.
  std::string text = scoped_symbolic_module("fused");
  IRModule mod = expect_round_trip(text);
  EXPECT_TRUE(well_formed(mod));
  const FunctionNode* fused = function(mod, "fused");
  const auto* inner = binding_value(*fused->body.as<SeqExprNode>()->blocks[0]->bindings[0]).as<FunctionNode>();
  ASSERT_TRUE(inner);
  const PrimExprNode* outer_n = fused->params[0]->struct_info_.as<TensorStructInfoNode>()->shape->at(0).get();
  const PrimExprNode* inner_n = inner->params[0]->struct_info_.as<TensorStructInfoNode>()->shape->at(0).get();
  EXPECT_NE(outer_n, inner_n);
  // The inner function is well formed on its own: it defines every variable it uses.
  EXPECT_TRUE(well_formed(Function(inner)));
  // Two sibling functions, each with an `n_1` of its own (annotations repeat text, not variables).
  IRModule merged = expect_round_trip(::partita::testing::kMergedSymbolicModule);
  const FunctionNode* outer = function(merged, "fused_relax_multiply_relax_nn_relu_relax_add_cutlass");
  const auto& bs = outer->body.as<SeqExprNode>()->blocks[0]->bindings;
  const auto* first = binding_value(*bs[0]).as<FunctionNode>();
  const auto* second = binding_value(*bs[2]).as<FunctionNode>();
  ASSERT_TRUE(first && second);
  auto body_dim = [](const FunctionNode* f) {
    const auto& b = f->body.as<SeqExprNode>()->blocks[0]->bindings.back();
    return b->var->struct_info_.as<TensorStructInfoNode>()->shape->at(0).get();
  };
  EXPECT_NE(body_dim(first), body_dim(second));
  EXPECT_EQ(body_dim(second), second->params[0]->struct_info_.as<TensorStructInfoNode>()->shape->at(0).get());
  // A nested function that uses its enclosing function's variable declares nothing.
  expect_round_trip(std::string(kHeader) + R"(@I.ir_module
class Module:
    @R.function
    def fused(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        # from partita.script import tir as T
        # from partita.script import relax as R

        @R.function
        def gv(x_1: R.Tensor((n, 4), dtype="float32")) -> R.Tensor((n, 4), dtype="float32"):
            return x_1

        y: R.Tensor((n, 4), dtype="float32") = gv(x)
        return y
)");
}

TEST(TvmForms, IfBranchesEndInALeafAsTvmParsesThem) {
  // A branch's last assignment of a call binds the call to `<var>_then` / `<var>_else` first,
  // as TVM's parser does (and prints: found by the TVM oracle).
  IRModule mod = parse_module(std::string(kRelaxHeader) + R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32"), c: R.Prim("bool")) -> R.Tensor((2,), dtype="float32"):
        if c:
            y: R.Tensor((2,), dtype="float32") = R.add(x, x)
        else:
            if c:
                z: R.Tensor((2,), dtype="float32") = R.exp(x)
            else:
                z: R.Tensor((2,), dtype="float32") = x
            y: R.Tensor((2,), dtype="float32") = R.multiply(z, x)
        return y
)");
  EXPECT_TRUE(well_formed(mod));
  EXPECT_EQ(testing::normalized_lines(print_module(mod)), testing::normalized_lines(std::string(kHeader) + R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32"), c: T.bool) -> R.Tensor((2,), dtype="float32"):
        if c:
            y_then: R.Tensor((2,), dtype="float32") = R.add(x, x)
            y: R.Tensor((2,), dtype="float32") = y_then
        else:
            if c:
                z_then: R.Tensor((2,), dtype="float32") = R.exp(x)
                z: R.Tensor((2,), dtype="float32") = z_then
            else:
                z: R.Tensor((2,), dtype="float32") = x
            y_else: R.Tensor((2,), dtype="float32") = R.multiply(z, x)
            y: R.Tensor((2,), dtype="float32") = y_else
        return y
)"));
  expect_round_trip(print_module(mod));
}

TEST(TvmForms, ListsAsTuplesAndStringAnnotations) {
  // A Python list where an expression goes is a tuple (R.strided_slice's axes), and TVM 0.27's
  // I.StringType() annotation of a string is Partita's R.Any (R.Object).
  IRModule mod = parse_module(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
        s: I.StringType() = R.str("tag")
        y = R.strided_slice(x, axes=[0], begin=[0], end=[2])
        return y
)");
  EXPECT_TRUE(well_formed(mod));
  std::string printed = print_module(mod);
  EXPECT_NE(printed.find("s: R.Any = R.str(\"tag\")"), std::string::npos) << printed;
  EXPECT_NE(printed.find("R.strided_slice(x, (0,), (0,), (2,), assume_inbound=False)"), std::string::npos) << printed;
  expect_round_trip(printed);
}

TEST(TvmForms, ErrorsAreLocated) {
  auto module = [](const std::string& body) {
    return "@I.ir_module\nclass Module:\n    @R.function\n    def main(" + body +
           ") -> R.Tensor((2,), dtype=\"float32\"):\n        return x\n";
  };
  EXPECT_EQ(error_of(module("x: R.Tensor((2,), dtype=\"float32\"), s: T.float99")),
            "ParseError: <string>:4:55: unknown dtype \"float99\"");
  EXPECT_EQ(error_of(module("x: R.Tensor((2,), dtype=\"float32\"), o: R.Any(1)")),
            "ParseError: <string>:4:58: R.Any takes no arguments");
  EXPECT_EQ(error_of(module("x: R.Tensor((2,), dtype=\"float32\"), f: R.Callable((R.Object,))")),
            "ParseError: <string>:4:76: R.Callable with parameters needs a return struct info");
  EXPECT_EQ(error_of(module("x: R.Tensor((2,), dtype=\"float32\"), f: R.Callable((R.Object,), R.Object, 3)")),
            "ParseError: <string>:4:87: expected True or False, found '3'");
  EXPECT_EQ(error_of(module("x: R.Tensor((2,), dtype=\"float32\"), f: R.Callable(rett=R.Object)")),
            "ParseError: <string>:4:64: R.Callable: unexpected keyword 'rett' (takes params, ret, purity)");
  EXPECT_EQ(error_of(module("x: R.Tensor((2,), dtype=\"float32\"), s: Q.float32")),
            "ParseError: <string>:4:53: expected struct info (R.Tensor, R.Tuple, R.Prim, T.<dtype>, ...), found 'Q'");
  EXPECT_EQ(error_of("m = TypeVar(\"n\")\n@I.ir_module\nclass Module:\n    pass\n"),
            "ParseError: <string>:1:13: TypeVar(\"...\") must repeat the variable's name");
  EXPECT_EQ(error_of("@I.ir_module\nclass Module:\n    I.module_attrs({\"a\": 1})\n    I.module_attrs({\"b\": 1})\n"),
            "ParseError: <string>:4:5: I.module_attrs is given twice");
  EXPECT_EQ(error_of("@I.ir_module\nclass Module:\n    I.module_attrs({\"a\": 1, \"a\": 2})\n"),
            "ParseError: <string>:3:29: module attribute \"a\" is given twice");
  EXPECT_EQ(error_of("@I.ir_module\nclass Module:\n    I.module_attrs({\"a\": [1, 2]})\n"),
            "ParseError: <string>:3:26: module attribute \"a\": lists are not supported");
  EXPECT_EQ(error_of("@I.ir_module\nclass Module:\n    e = R.ExternFunc(\"f\", R.Object)\n"),
            "ParseError: <string>:3:27: the struct info of an R.ExternFunc must be an R.Callable");
  EXPECT_EQ(error_of(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):
        n = T.int32()
        return x
)"),
            "ParseError: <string>:5:9: symbolic variable 'n' is declared int32 but the signature uses it as int64");
  EXPECT_EQ(error_of(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        y: R.Tensor((2,), dtype="float32") = R.call_pure_packed(x)
        return y
)"),
            "ParseError: <string>:5:65: expected the packed function's name, found 'x'");
}

}  // namespace
}  // namespace partita::script
