// Helpers for pass tests: parse TVMScript text and compare modules structurally, printing both
// on a mismatch.
#pragma once

#include <gtest/gtest.h>

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

/// Runs `pass` on `before` and checks the result equals `expected` and is well formed.
template <class P>
void check_pass(const P& pass, const std::string& before, const std::string& expected) {
  IRModule after = pass(parse(before));
  EXPECT_TRUE(modules_equal(after, parse(expected)));
  EXPECT_TRUE(well_formed(after));
}

}  // namespace partita::testing
