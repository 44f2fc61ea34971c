// Analysis of a partitioned module for `partita report`: per backend (and the host) the
// operators it runs, an estimate of their FLOPs and the number of partitions; and the graph of
// `main` in Graphviz's dot language (offloaded partitions as coloured clusters).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "partita/ir/expr.h"
#include "partita/ir/module.h"

namespace partita::cli {

/// What one backend (or "host") runs.
struct BackendStats {
  std::map<std::string, int64_t> op_counts;  // op name ("relax.nn.conv2d") -> calls
  double flops = 0;
  int64_t partitions = 0;  // offloaded functions called from main (0 for the host)
};

struct ModuleReport {
  std::map<std::string, BackendStats> backends;  // "host" and every codegen name seen
  double total_flops = 0;
  bool symbolic_dims = false;  // FLOPs counted symbolic dimensions as 1
};

/// Estimated floating-point operations of one operator call from its struct info (conv: 2 *
/// output elements * receptive field; matmul: 2 * output elements * K; pools: output elements *
/// window; data movement: 0; other operators: one per output element).
double estimate_flops(const CallNode& call, bool* symbolic = nullptr);

/// Walks `main` of `mod` (Error("KeyError") if absent).
ModuleReport analyze_module(const IRModule& mod);

/// The report as a table; backends listed in `order` first, then any others, then the host.
std::string format_report(const ModuleReport& report, const std::vector<std::string>& order);

/// `main` as a dot graph: one node per operator binding, partitions as clusters.
std::string module_to_dot(const IRModule& mod);

/// The fill colour used for `backend` ("host" is grey).
std::string backend_color(const std::string& backend);

}  // namespace partita::cli
