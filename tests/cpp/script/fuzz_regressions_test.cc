// Inputs the parser fuzzer (tests/fuzz/parser_fuzzer.cc) found mishandled, each kept as a test,
// with the fuzzer's own oracle: text that parses is a well-formed module whose printed form
// parses again and prints identically.
#include <gtest/gtest.h>

#include "partita/ir/analysis.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"
#include "test_util.h"

namespace partita::script {
namespace {

/// The fuzzer's oracle on `text`; returns the printed module.
std::string expect_fuzz_oracle(const std::string& text) {
  IRModule mod = parse_module(text);
  EXPECT_TRUE(well_formed(mod));
  std::string printed = print_module(mod);
  EXPECT_EQ(print_module(parse_module(printed)), printed);
  return printed;
}

// A nested function whose parameter introduces a symbolic variable. As in TVM, a function's
// parameters define the new symbolic variables they mention, for a local function too: `k` is
// the inner function's own, declared (`k = T.int64()`) first thing in its body, as TVM prints
// it, and not in the outer function. Before: well_formed rejected the parse ("symbolic variable
// 'k' is used in the struct info of 'gv' before it is defined") and the printer declared `k` in
// the outer function.
TEST(ParserFuzzRegressions, ANestedFunctionsParameterDefinesItsSymbolicVariable) {
  const std::string before = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        @R.function
        def gv(y: R.Tensor((k,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
            return x
        z: R.Tensor((4,), dtype="float32") = gv(x)
        return z
)";
  const std::string after = R"(# from partita.script import ir as I
# from partita.script import tir as T
# from partita.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        # from partita.script import tir as T
        # from partita.script import relax as R

        @R.function
        def gv(y: R.Tensor(("k",), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
            k = T.int64()
            return x

        z: R.Tensor((4,), dtype="float32") = gv(x)
        return z
)";
  EXPECT_EQ(testing::normalized_lines(expect_fuzz_oracle(before)), testing::normalized_lines(after));
  // The printed form is a fixed point and well formed in its turn.
  EXPECT_EQ(testing::normalized_lines(expect_fuzz_oracle(after)), testing::normalized_lines(after));
}

// The fuzzer's inputs themselves (tests/fuzz/corpus/parser/regression-nested-function-*): the
// first a partitioned module whose composite function's parameter has a long symbolic name.
TEST(ParserFuzzRegressions, TheFuzzersInputsPassItsOracle) {
  for (const char* name : {"regression-nested-function-symbolic-param.txt",
                           "regression-nested-function-symbolic-param.min.txt"}) {
    SCOPED_TRACE(name);
    const std::string text =
        testing::read_file(std::string(PARTITA_SOURCE_DIR) + "/tests/fuzz/corpus/parser/" + name);
    ASSERT_FALSE(text.empty());
    const std::string printed = expect_fuzz_oracle(text);
    // The inner function (12 spaces in) declares its variable; the outer one (8 in) does not.
    int inner = 0, outer = 0;
    for (const std::string& line : testing::normalized_lines(printed)) {
      if (line.size() < 13 || line.compare(line.size() - 12, 12, " = T.int64()") != 0) continue;
      if (line.compare(0, 12, std::string(12, ' ')) == 0 && line[12] != ' ') ++inner;
      else if (line.compare(0, 8, std::string(8, ' ')) == 0 && line[8] != ' ') ++outer;
    }
    EXPECT_EQ(inner, 1) << printed;
    EXPECT_EQ(outer, 0) << printed;
  }
}

// A signature whose only use of a new name is inside an expression (`J * K1`): nothing defines
// the name (TVM's well_formed defines a parameter's bare dimensions only), so the parser refuses
// it, naming the variable; before, it accepted a module well_formed then rejected (found by
// fuzz_parser in its hour: corpus/parser/regression-signature-var-only-in-expression.txt).
TEST(ParserFuzzRegressions, ASignatureVariableOnlyInsideAnExpressionIsAnError) {
  const std::string header = "@I.ir_module\nclass Module:\n    @R.function\n";
  try {
    parse_module(header + "    def f(x: R.Tensor((n * m,), \"float32\")) -> R.Tensor((n * m,), \"float32\"):\n"
                          "        return x\n");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic variable 'm' of function 'f' appears in its signature only "
                                         "inside an expression"),
              std::string::npos)
        << e.what();
  }
  // Defined by another parameter's bare dimensions, the same expression is fine (as in TVM).
  expect_fuzz_oracle(header + "    def f(x: R.Tensor((n * m,), \"float32\"), s: R.Shape([n, m])) -> "
                              "R.Tensor((n * m,), \"float32\"):\n        return x\n");
  const std::string text = testing::read_file(
      std::string(PARTITA_SOURCE_DIR) + "/tests/fuzz/corpus/parser/regression-signature-var-only-in-expression.txt");
  ASSERT_FALSE(text.empty());
  EXPECT_THROW(parse_module(text), Error);
}

// A dataflow variable used after its block (R.output names another variable): before, the
// parser resolved the name and made a module well_formed rejects ("DataflowVar 'gv_1' is used
// outside its dataflow block"); now the block's dataflow variables end with it (found by
// fuzz_parser: corpus/parser/regression-dataflow-var-after-its-block.txt).
TEST(ParserFuzzRegressions, ADataflowVariableAfterItsBlockIsUndefined) {
  const std::string text = R"(@I.ir_module
class Module:
    @R.function
    def f(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        with R.dataflow():
            y: R.Tensor((2,), "float32") = R.nn.relu(x)
            z: R.Tensor((2,), "float32") = R.add(y, y)
            R.output(z)
        return y
)";
  try {
    parse_module(text);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("undefined variable 'y'"), std::string::npos) << e.what();
  }
  // Named in R.output, it lives on.
  std::string fixed = text;
  fixed.replace(fixed.find("R.output(z)"), 11, "R.output(y)");
  expect_fuzz_oracle(fixed);
  const std::string fuzzed = testing::read_file(
      std::string(PARTITA_SOURCE_DIR) + "/tests/fuzz/corpus/parser/regression-dataflow-var-after-its-block.txt");
  ASSERT_FALSE(fuzzed.empty());
  EXPECT_THROW(parse_module(fuzzed), Error);
}

// A trailing comma after a call (`c = R.nn.relu(x),`) made a tuple whose field is a call, which
// well_formed rejects; now a parse error (found by fuzz_parser:
// corpus/parser/regression-tuple-of-a-call.txt).
TEST(ParserFuzzRegressions, ATupleOfACallIsAnError) {
  const std::string text = R"(@I.ir_module
class Module:
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        y = R.nn.relu(x),
        return y
)";
  EXPECT_THROW(parse_module(text), Error);
  const std::string fuzzed = testing::read_file(std::string(PARTITA_SOURCE_DIR) +
                                                "/tests/fuzz/corpus/parser/regression-tuple-of-a-call.txt");
  ASSERT_FALSE(fuzzed.empty());
  EXPECT_THROW(parse_module(fuzzed), Error);
}

// An integer attribute written as a float beyond int64's range (`groups=18446744073709551615.0`)
// was converted to int64 unchecked, which is undefined behaviour (UBSan); it is now a type error
// naming the attribute (found by fuzz_parser: corpus/parser/regression-huge-float-int-attribute.txt).
TEST(ParserFuzzRegressions, AFloatBeyondInt64IsNotAnIntegerAttribute) {
  for (const char* groups : {"18446744073709551615.0", "-1e300", "9.3e18"}) {
    const std::string text = std::string(R"(@I.ir_module
class Module:
    @R.function
    def f(x: R.Tensor((1, 4, 8, 8), "float32"), w: R.Tensor((4, 1, 3, 3), "float32")):
        y = R.nn.conv2d(x, w, groups=)") + groups + R"()
        return y
)";
    SCOPED_TRACE(groups);
    try {
      parse_module(text);
      ADD_FAILURE() << "groups=" << groups << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("groups"), std::string::npos) << e.message();
    }
  }
  const std::string fuzzed = testing::read_file(std::string(PARTITA_SOURCE_DIR) +
                                                "/tests/fuzz/corpus/parser/regression-huge-float-int-attribute.txt");
  ASSERT_FALSE(fuzzed.empty());
  EXPECT_THROW(parse_module(fuzzed), Error);
}

// A Python keyword as a name (`R.Tensor((1, if, 1, 1))`): the parser took it for a symbolic
// variable and the printed `if = T.int64()` did not parse back; a keyword now names nothing
// (found by fuzz_parser: corpus/parser/regression-keyword-as-symbolic-var.txt).
TEST(ParserFuzzRegressions, APythonKeywordNamesNothing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"def f(x: R.Tensor((1, if), \"float32\")):\n        return x", "symbolic variable"},
      {"def f(x: R.Tensor((1, n), \"float32\")):\n        lambda = R.nn.relu(x)\n        return x", "variable"},
      {"def f(for: R.Tensor((1,), \"float32\")):\n        return for", "variable"},
      {"def while(x: R.Tensor((1,), \"float32\")):\n        return x", "function"},
  };
  for (const auto& [def, what] : cases) {
    const std::string text = "@I.ir_module\nclass Module:\n    @R.function\n    " + def + "\n";
    SCOPED_TRACE(text);
    try {
      parse_module(text);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("is a Python keyword and cannot name a " + what), std::string::npos) << e.message();
    }
  }
  const std::string fuzzed = testing::read_file(std::string(PARTITA_SOURCE_DIR) +
                                                "/tests/fuzz/corpus/parser/regression-keyword-as-symbolic-var.txt");
  ASSERT_FALSE(fuzzed.empty());
  EXPECT_THROW(parse_module(fuzzed), Error);
}

}  // namespace
}  // namespace partita::script
