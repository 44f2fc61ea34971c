// `partita run`: loads an artifact, binds inputs (from .npy files or seeded random data shaped
// by main's signature), runs it and prints outputs and latency statistics.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "partita/runtime/executable.h"

namespace partita::cli {

struct RunOptions {
  std::string artifact;
  std::string function = "main";
  std::vector<std::string> inputs;  // "name=file.npy"
  int repeat = 10;
  int warmup = 1;
  uint64_t seed = 0;
  std::string output_dir;
  int show_values = 8;
  bool profile = false;  // also print the time of every kernel and backend call (one extra run)
  std::string device = "cpu";  // the VM's device ("cuda", "cuda:1"): inputs go there once

};

int run_command(const RunOptions& options);

/// The median latency (ms) of `repeat` runs of `function` on seeded random inputs, on the CPU.
double median_latency_ms(const std::shared_ptr<runtime::Executable>& exec, const std::string& function, int repeat);

}  // namespace partita::cli
