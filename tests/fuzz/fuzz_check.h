// What every harness of tests/fuzz shares: an Error is the right answer to bad input; anything
// else a harness finds wrong (an invariant broken on input that was accepted) stops the fuzzer
// with the reason, so libFuzzer keeps the input as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace partita::fuzz {

[[noreturn]] inline void fail(const std::string& why) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", why.c_str());
  std::abort();
}

}  // namespace partita::fuzz
