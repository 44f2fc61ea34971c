// Helpers for pass tests: parse TVMScript text and compare modules structurally, printing both
// on a mismatch.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"

namespace partita::testing {

inline IRModule parse(const std::string& text) { return script::parse_module(text); }

inline ::testing::AssertionResult modules_equal(const IRModule& actual, const IRModule& expected) {
  if (structural_equal(actual, expected)) return ::testing::AssertionSuccess();
  auto diff = structural_diff(actual, expected);
  return ::testing::AssertionFailure() << "modules differ" << (diff ? " at " + *diff : std::string())
                                       << "\n--- actual ---\n" << script::print_module(actual)
                                       << "\n--- expected ---\n" << script::print_module(expected);
}

/// `lines` (one binding a line; empty lines dropped), each indented by `indent` spaces.
inline std::string indented(const std::string& lines, size_t indent) {
  std::string out;
  for (size_t at = 0, end; at < lines.size(); at = end + 1) {
    end = std::min(lines.find('\n', at), lines.size());
    if (end > at) out += std::string(indent, ' ') + lines.substr(at, end - at) + "\n";
  }
  return out;
}

/// The text of a module whose one function, `def <signature>:`, is one dataflow block of
/// `bindings` that outputs and returns `output`: the frame of most pass cases.
inline std::string dataflow_module(const std::string& signature, const std::string& bindings,
                                   const std::string& output) {
  return "\n@I.ir_module\nclass Module:\n    @R.function\n    def " + signature +
         ":\n        with R.dataflow():\n" + indented(bindings, 12) + "            R.output(" +
         output + ")\n        return " + output + "\n";
}

/// The same for a function of one plain block of `bindings` that returns `result`.
inline std::string plain_module(const std::string& signature, const std::string& bindings,
                                const std::string& result) {
  return "\n@I.ir_module\nclass Module:\n    @R.function\n    def " + signature + ":\n" +
         indented(bindings, 8) + "        return " + result + "\n";
}

/// Runs `pass` on `before` and checks the result equals `expected` and is well formed.
template <class P>
void check_pass(const P& pass, const std::string& before, const std::string& expected) {
  IRModule after = pass(parse(before));
  EXPECT_TRUE(modules_equal(after, parse(expected)));
  EXPECT_TRUE(well_formed(after));
}

}  // namespace partita::testing
