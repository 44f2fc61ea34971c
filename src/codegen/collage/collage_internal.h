// Internal to CollagePartition: the bindings of one dataflow block as a graph, the candidates
// over it, their measurement and the search (see partita/codegen/collage.h).
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "partita/codegen/collage.h"
#include "partita/ir/expr.h"
#include "partita/transform/fuse_ops_by_pattern.h"

namespace partita::codegen::collage {

constexpr double kInfinite = std::numeric_limits<double>::infinity();

/// The bindings of one dataflow block: node i is binding i; its inputs are the nodes < i whose
/// variables its value uses.
struct BlockGraph {
  std::string function;
  std::vector<Var> vars;
  std::vector<Expr> values;
  std::vector<char> is_op_call;      // a call of an operator (the host has a kernel for it)
  std::vector<char> used_outside;    // used after the block (a non-dataflow variable)
  std::vector<std::vector<int>> inputs, users;
  std::unordered_map<const VarNode*, int> pos;

  int size() const { return int(vars.size()); }
  /// True when no path leaves `nodes` (sorted) and comes back.
  bool is_convex(const std::vector<int>& nodes) const;
  /// True when some node of `a` feeds some node of `b` or the other way round.
  bool adjacent(const std::vector<int>& a, const std::vector<int>& b) const;
};

/// The dataflow blocks of the module's plain functions.
std::vector<BlockGraph> block_graphs(const IRModule& mod);

/// A placement of some bindings of one block.
struct Candidate {
  std::string backend;  // "host" or a backend name
  std::vector<int> nodes;  // sorted
  std::vector<std::pair<std::string, int>> matches;  // (pattern, root node); empty for the host
  double cost_us = kInfinite;
  bool measured = false;
  /// What entering it from the host costs in a model (the backend's, CostModel::boundary_us);
  /// the search adds it to cost_us. 0 for the host.
  double boundary_us = 0;
  double total_us() const { return cost_us + boundary_us; }
};

/// Every match of `backend`'s patterns in the blocks (checks included), grouped by block.
std::vector<std::vector<Candidate>> pattern_candidates(const IRModule& mod, const std::vector<BlockGraph>& blocks,
                                                       const std::string& backend);
/// Unions of up to `max_merge` adjacent matches (of one backend) that stay convex.
std::vector<Candidate> merged_candidates(const BlockGraph& g, const std::vector<Candidate>& matches, int max_merge);

/// What fixed-priority partitioning would make of `matches` (each backend's, in the order
/// FuseOpsByPattern tries them; backends in priority order): matches taken greedily where their
/// bindings are still free, then each backend's connected, convex group of taken matches as one
/// candidate (MergeCompositeFunctions' partitions). A whole-model partition keeps a backend's
/// layouts across every operator, which unions of a few matches cannot show. Groups of one
/// match are left out unless `with_single` (then the result is the configuration's partitions).
std::vector<Candidate> fixed_priority_candidates(const BlockGraph& g,
                                                 const std::vector<const std::vector<Candidate>*>& matches,
                                                 bool with_single = false);

/// The fixed configurations validation compares with: each backend alone, then (with more than
/// one) the backends in the order given and in reverse.
std::vector<std::vector<std::string>> fixed_configurations(const std::vector<std::string>& backends);

/// A fixed configuration's placement of a block as indexes into `candidates` (whose first
/// g.size() entries are the host's, one per binding): its partitions (fixed_priority_candidates
/// with single matches), each found among the candidates, and the host for the rest.
std::vector<int> fixed_cover(const BlockGraph& g, const std::vector<Candidate>& candidates,
                             const std::vector<const std::vector<Candidate>*>& matches);

/// The patterns of `backends` (priority order within each), each check restricted to the given
/// matches: (pattern name -> roots). Other matches are refused.
using AllowedMatches = std::map<std::string, std::set<const VarNode*>>;
std::vector<transform::FusionPattern> restricted_patterns(const std::vector<std::string>& backends,
                                                          std::shared_ptr<const AllowedMatches> allowed);
/// FuseOpsByPattern with restricted_patterns, then MergeCompositeFunctions.
IRModule partition_restricted(IRModule mod, const std::vector<std::string>& backends,
                              std::shared_ptr<const AllowedMatches> allowed);

/// Measures candidates, with the persistent cache.
class CostModel {
 public:
  explicit CostModel(const CollageOptions& options);
  ~CostModel();
  /// Sets `c.cost_us` / `c.measured`. A candidate whose backend refuses it or that fails to run
  /// costs infinity (the host then costs a nominal microsecond, so a placement always exists).
  /// `estimate_only`: use the cache, else leave the cost to the caller.
  void cost(const BlockGraph& g, Candidate& c, bool estimate_only);
  void save() const;
  size_t measured() const { return measured_; }
  /// What an empty call of the VM costs (measured once, subtracted from every cost).
  double call_overhead_us();
  size_t cached() const { return cached_; }
  double measure_seconds() const { return measure_s_; }
  /// What entering one partition of `backend` from the host costs in a model beyond the
  /// partition's own time alone: N copies of a probe operator the backend takes, alternating
  /// with host operators, timed as one call, minus the same parts timed as candidates and one
  /// call's overhead, per copy. Measured once per machine and targets (cached); 0 when the
  /// backend takes none of the probes.
  double boundary_us(const std::string& backend);
  /// Median end-to-end microseconds of one call of each module's main (random inputs), built
  /// with the targets and run in `rounds` interleaved rounds of `runs` calls; infinity for one
  /// that fails to build or run. From the cache when every one is there (`all_cached` says so).
  /// `tag` prefixes the cache keys: a comparison run apart keeps its own times, so that a warm
  /// placement reads each comparison as it was made and repeats its decisions.
  std::vector<double> time_placements(const std::vector<IRModule>& mods, int runs, int rounds, bool& all_cached,
                                      const std::string& tag = "placement");

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  size_t measured_ = 0, cached_ = 0;
  double measure_s_ = 0;
  std::map<std::string, double> boundaries_;
};

/// The cheapest cover of the block's nodes by disjoint candidates whose partitions form no cycle
/// (A feeds B and B feeds A, possible between convex candidates whose edges cross); indexes
/// into `candidates`. A candidate in a cycle is excluded and the search repeated.
std::vector<int> cheapest_cover(const BlockGraph& g, std::vector<Candidate> candidates);
/// A candidate of `cover` that is in a cycle of partitions, or -1.
int candidate_in_cycle(const BlockGraph& g, const std::vector<Candidate>& candidates, const std::vector<int>& cover);

}  // namespace partita::codegen::collage
