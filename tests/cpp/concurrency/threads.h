// Running one body on N threads released at the same instant (a latch), so first uses of
// lazily filled tables and calls of shared objects really overlap. Errors thrown on a thread are
// collected and reported by the test, not lost with the thread.
#pragma once

#include <exception>
#include <functional>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "partita/support/error.h"

namespace partita::testing {

/// How many threads the tests start: more than this machine's cores, so they interleave.
constexpr int kThreads = 8;

/// Runs body(i) for i in [0, n) on n threads started together; returns the errors they threw.
inline std::vector<std::string> run_together(int n, const std::function<void(int)>& body) {
  std::latch start(n);
  std::mutex mu;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      try {
        body(i);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        errors.push_back("thread " + std::to_string(i) + ": " + e.what());
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace partita::testing
