// CollagePartition: placement of every operator on the backend that runs it fastest, by
// measurement (TVM's Collage, RFC 0062, for Relax's BYOC backends).
//
// Candidates are every match of every backend's pattern table (its checks included), unions of
// adjacent matches of one backend that it can take as one partition (convex, at most
// `max_merge` matches), and the host for every operator. Each distinct candidate is extracted
// into a module of its own, built with its backend, run on this machine and timed (median of
// repeated runs after warm-up, minus the cost of an empty call); costs are kept in a persistent
// cache shared by models and runs, keyed by the candidate's text with constants abstracted to
// their shapes, its backend, the targets and the CPU. A shortest-path search over the bindings
// of each dataflow block (a state is the set of bindings covered; each step covers the first
// uncovered binding, Collage's rule) picks the cheapest placement. The result is in the form
// RunCodegen takes: the chosen matches become composites (FuseOpsByPattern restricted to them)
// merged per backend (MergeCompositeFunctions).
//
// What a candidate timed alone misses: entering a backend's partition from the host costs more
// in a model than back to back (oneDNN's OpenMP threads have gone to sleep, the call crosses the
// runtime's module boundary). That cost is measured once per machine and backend (a chain of
// the backend's operator alternating with host operators, against the same parts timed alone),
// cached with the other costs, and added to every partition of that backend in the search.
// Validation: the search's placement and every fixed configuration's (each backend alone, and
// the backends in the order given and in reverse, as `--backends a,b` partitions them) are
// built and run end to end on this machine in interleaved rounds, and the fastest is returned;
// these times are cached too, so a warm placement measures nothing.
//
// It lives in codegen, not transform, because measuring a candidate builds and runs it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "partita/codegen/target.h"
#include "partita/ir/module.h"
#include "partita/runtime/device.h"
#include "partita/transform/pass.h"

namespace partita::codegen {

struct CollageOptions {
  /// Backends whose patterns are candidates (registered backend names). The
  /// host is always a candidate for every operator.
  std::vector<std::string> backends;
  /// Targets the candidates are built with (backend options).
  std::vector<Target> targets;
  /// The persistent cost file: "" is $XDG_CACHE_HOME/partita/collage_costs.json (or
  /// ~/.cache/...), "none" keeps costs in memory only.
  std::string cost_cache;
  /// Seconds spent measuring new candidates; past it, a merged candidate not yet measured costs
  /// the sum of its matches and other candidates are measured anyway (the search needs them).
  double budget_s = 120;
  /// The most matches of one backend merged into one candidate.
  int max_merge = 4;
  /// Timed runs per candidate (after two warm-up runs); fewer when a run is slow.
  int repeats = 15;
  /// Value given to symbolic dimensions when a candidate is measured.
  int64_t symbolic_dim = 1;
  /// Where candidates run when measured (the VM's device). On a GPU, what no backend takes runs
  /// as the kind-fusing code generator's kernels: include its target in
  /// `targets`, and the "host" candidates are those kernels.
  Device device = Device::cpu();
  /// Measures the search's placement against the fixed configurations' end to end and returns
  /// the fastest (see the file comment). Off: the search's placement, unmeasured.
  bool validate = true;
  /// Timed runs of each placement per round of validation, and the rounds (interleaved).
  int validate_runs = 5;
  int validate_rounds = 5;
  /// After validation: fit the extra cost of a partition in this model from the placements run
  /// (least squares over their partition counts), search again with it, and run the new
  /// placement against the fastest (CollageResult::refit_boundary_us).
  bool refit = true;
  /// Prints one line per measured candidate to stderr.
  bool verbose = false;
};

/// One whole placement the validation compared: the search's ("collage") or a fixed
/// configuration's (its backends in priority order, "dnnl,cblas").
struct CollagePlacement {
  std::string name;
  double predicted_us = 0;   // the cost model's sum over its partitions, boundaries and a call
  double measured_us = 0;    // median end-to-end time of one call on this machine (0: not run)
  double boundary_us = 0;    // of the prediction: entering its backend partitions
  size_t partitions = 0;     // backend partitions
  bool cached = false;       // the measurement came from the cost cache
};

/// One chosen partition.
struct CollagePartitionInfo {
  std::string function;          // the function it is in
  std::string backend;           // "host" or a backend name
  std::vector<std::string> vars; // the bindings it covers, in binding order
  std::vector<std::string> patterns;  // the composites (empty for the host)
  double cost_us = 0;
  bool measured = false;         // false: estimated (budget spent, or it failed to run)
};

/// What each operator could have cost: the host, and per backend its cheapest match holding it.
struct CollageAlternatives {
  std::string function, var, op;
  std::string chosen;                            // the backend it was placed on
  double host_us = 0;
  struct Option {
    std::string backend, pattern;
    double cost_us = 0;
    size_t bindings = 0;                         // how many bindings the match covers
  };
  std::vector<Option> backends;                  // backends with a match holding it
};

struct CollageResult {
  IRModule mod;
  IRModule input;                // the module placed (constants folded): the tables' binding names
  std::vector<CollagePartitionInfo> partitions;
  std::vector<CollageAlternatives> alternatives;  // one per operator call
  double call_overhead_us = 0;   // an empty call of the VM: part of the predicted end-to-end time
  double estimated_us = 0;       // sum of the chosen candidates' costs and their boundaries
  double boundary_total_us = 0;  // of which: entering the chosen backend partitions
  std::map<std::string, double> boundary_us;  // per backend: what entering one partition costs
  std::vector<CollagePlacement> placements;   // validation: the search's and the fixed ones
  std::string chosen = "collage";             // the placement returned (a name in `placements`)
  double validate_s = 0;                      // seconds of building and running placements
  /// Validation's fit of what a backend partition costs in this model beyond its parts and the
  /// boundary probe (0: none); with `refit`, the search ran again with it ("collage-refit").
  double refit_boundary_us = 0;
  /// The placement "collage-refit" was run against (the fastest before it; "" if it was not
  /// run) and that placement's time in the same rounds.
  std::string refit_against;
  double refit_against_us = 0;
  size_t candidates = 0;         // distinct candidates
  size_t measured = 0;           // measured in this call
  size_t cached = 0;             // found in the cost cache
  double measure_s = 0, search_s = 0;
  /// A table of the placement (one line per partition) for reports.
  std::string summary() const;
  /// A table of the alternatives (one line per operator).
  std::string alternatives_table() const;
  /// A table of the placements validation compared (empty without validation).
  std::string placements_table() const;
  /// The chosen placement's validation entry, or nullptr.
  const CollagePlacement* chosen_placement() const;
  /// The predicted time of one call of the placed module: the chosen costs plus one call.
  double predicted_us() const { return estimated_us + call_overhead_us; }
};

/// Places `mod`'s operators (see the file comment). Error("KeyError") for an unknown backend.
CollageResult collage_partition(IRModule mod, const CollageOptions& options);

/// The pass form (Python relax.transform.CollagePartition).
transform::Pass CollagePartition(CollageOptions options);

}  // namespace partita::codegen
