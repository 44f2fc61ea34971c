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

/// The text of a module whose one function, `def <signature>:`, is one dataflow block of
/// `bindings` (one a line) that outputs and returns `output`: the frame of most pass cases.
inline std::string dataflow_module(const std::string& signature, const std::string& bindings,
                                   const std::string& output) {
  std::string text = "\n@I.ir_module\nclass Module:\n    @R.function\n    def " + signature +
                     ":\n        with R.dataflow():\n";
  for (size_t at = 0, end; at < bindings.size(); at = end + 1) {
    end = std::min(bindings.find('\n', at), bindings.size());
    if (end > at) text += "            " + bindings.substr(at, end - at) + "\n";
  }
  return text + "            R.output(" + output + ")\n        return " + output + "\n";
}

/// Runs `pass` on `before` and checks the result equals `expected` and is well formed.
template <class P>
void check_pass(const P& pass, const std::string& before, const std::string& expected) {
  IRModule after = pass(parse(before));
  EXPECT_TRUE(modules_equal(after, parse(expected)));
  EXPECT_TRUE(well_formed(after));
}

}  // namespace partita::testing
