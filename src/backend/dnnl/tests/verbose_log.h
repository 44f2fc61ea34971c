// oneDNN's DNNL_VERBOSE execution log of a piece of a test: each line names a primitive's
// implementation ("jit:uni", "brgconv:avx512_core", "ref:any", ...), so tests can require that
// what the backend offloads never runs on oneDNN's reference kernels.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace partita::backend::dnnl {

/// Runs `run` with oneDNN's verbose mode on and returns its execution lines. Everything else
/// it printed (a test failure, for one) is printed again.
template <class F>
std::vector<std::string> verbose_exec_lines(F run) {
  ::dnnl::set_verbose(1);
  ::testing::internal::CaptureStdout();
  try {
    run();
  } catch (...) {
    ::dnnl::set_verbose(0);
    std::cout << ::testing::internal::GetCapturedStdout();
    throw;
  }
  ::dnnl::set_verbose(0);
  std::istringstream log(::testing::internal::GetCapturedStdout());
  std::vector<std::string> out;
  for (std::string line; std::getline(log, line);) {
    if (line.find("_verbose,exec,") != std::string::npos) out.push_back(line);
    else if (line.find("_verbose,") == std::string::npos) std::cout << line << "\n";
  }
  return out;
}

/// Whether a verbose execution line is of one of oneDNN's reference implementations.
inline bool is_reference_kernel(const std::string& line) { return line.find(",ref") != std::string::npos; }

}  // namespace partita::backend::dnnl
