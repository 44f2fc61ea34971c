// Analysis of a partitioned module for `partita report`: per backend (and the host) the
// operators it runs, an estimate of their FLOPs and bytes moved (the operators' cost traits in
// the op registry) and the number of partitions; and the graph of `main` in Graphviz's dot
// language (offloaded partitions as coloured clusters).
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
  double bytes = 0;        // read and written by its operators
  int64_t partitions = 0;  // offloaded functions called from main (0 for the host)
};

struct ModuleReport {
  std::map<std::string, BackendStats> backends;  // "host" and every codegen name seen
  double total_flops = 0;
  double total_bytes = 0;
  bool symbolic_dims = false;   // costs counted symbolic dimensions as 1
  int64_t unknown_costs = 0;    // operator calls whose FLOPs or bytes are unknown (counted as 0)
};

/// The estimated cost of one call: its operator's FLOP and byte traits (op::call_flops and
/// op::call_bytes, see op/registry.h for what they count) with every symbolic dimension taken as
/// 1. A call that is not of an operator costs nothing here.
struct CallCost {
  double flops = 0;
  double bytes = 0;
  bool symbolic = false;  // a symbolic dimension was taken as 1
  bool unknown = false;   // the operator's FLOPs or bytes are unknown: counted as 0
};
CallCost estimate_cost(const CallNode& call);

/// Walks `main` of `mod` (Error("KeyError") if absent).
ModuleReport analyze_module(const IRModule& mod);

/// The report as a table; backends listed in `order` first, then any others, then the host.
std::string format_report(const ModuleReport& report, const std::vector<std::string>& order);

/// `main` as a dot graph: one node per operator binding, partitions as clusters.
std::string module_to_dot(const IRModule& mod);

/// How Collage placed one operator binding: its backend (the node's colour), a short line for
/// the node's label and a tooltip (the alternatives and their measured costs).
struct PlacementNote {
  std::string backend, label, tooltip;
};
/// One chosen partition: the bindings drawn as one cluster in the backend's colour.
struct PlacementGroup {
  std::string backend, label;
  std::vector<std::string> vars;
};
/// `main` of the module before partitioning as a dot graph, every binding named in `notes`
/// coloured and annotated as placed, `groups` as clusters.
std::string placement_to_dot(const IRModule& mod, const std::map<std::string, PlacementNote>& notes,
                             const std::vector<PlacementGroup>& groups);

/// The fill colour used for `backend` ("host" is grey).
std::string backend_color(const std::string& backend);

}  // namespace partita::cli
