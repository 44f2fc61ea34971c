// CollagePartition: candidates, their costs, the search per block, and the partitioned module.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "collage_internal.h"
#include "partita/backend/registry.h"
#include "partita/runtime/device_api.h"
#include "partita/support/error.h"
#include "partita/transform/fold_constant.h"
#include "partita/transform/pattern_registry.h"

namespace partita::codegen {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void check_backends(const CollageOptions& options) {
  if (options.backends.empty())
    throw_error("ValueError", "CollagePartition: no backends given (registered backend names)");
  for (const std::string& b : options.backends) {
    auto info = backend::find_backend(b);
    if (!info) {
      std::string names;
      for (const std::string& n : backend::list_backends()) names += (names.empty() ? "" : ", ") + n;
      throw_error("KeyError", "CollagePartition: unknown backend '" + b + "' (registered: " + names + ")");
    }
    if (transform::get_patterns_with_prefix(b + ".").empty())
      throw_error("ValueError", "CollagePartition: backend '" + b +
                                    "' has no fusion patterns (it takes operators by kind, not by pattern)");
    if (!info->codegen) throw_error("ValueError", "CollagePartition: backend '" + b + "' has no code generator yet");
  }
}

// The alternatives of every operator of a block, after the search placed them.
void result_alternatives(const collage::BlockGraph& g, const std::vector<collage::Candidate>& cands,
                         CollageResult& result) {
  std::map<std::string, std::string> chosen;  // var -> backend
  for (const CollagePartitionInfo& p : result.partitions)
    if (p.function == g.function)
      for (const std::string& v : p.vars) chosen[v] = p.backend;
  for (int n = 0; n < g.size(); ++n) {
    auto* call = g.values[size_t(n)].as<CallNode>();
    auto* op = call ? call->op.as<OpNode>() : nullptr;
    if (!op) continue;
    CollageAlternatives a;
    a.function = g.function;
    a.var = g.vars[size_t(n)]->name_hint;
    a.op = op->name;
    a.chosen = chosen.count(a.var) ? chosen[a.var] : "host";
    std::map<std::string, CollageAlternatives::Option> best;  // per backend: its cheapest single match
    for (const collage::Candidate& c : cands) {
      if (!std::binary_search(c.nodes.begin(), c.nodes.end(), n)) continue;
      if (c.backend == "host") a.host_us = c.cost_us;
      if (c.matches.size() != 1 || c.cost_us == collage::kInfinite) continue;  // alone, without its boundary
      auto it = best.find(c.backend);
      if (it == best.end() || c.cost_us < it->second.cost_us)
        best[c.backend] = {c.backend, c.matches[0].first, c.cost_us, c.nodes.size()};
    }
    for (auto& [name, o] : best) a.backends.push_back(o);
    result.alternatives.push_back(std::move(a));
  }
}

// A whole placement: its name, one cover per block (indexes into that block's candidates) and
// the module it makes.
struct Placement {
  std::string name;
  std::vector<std::vector<int>> covers;
  IRModule mod;
};

// The module of the search's covers: the chosen matches as composites, merged per backend.
IRModule placed_module(IRModule mod, const std::vector<std::string>& backends,
                       const std::vector<collage::BlockGraph>& blocks,
                       const std::vector<std::vector<collage::Candidate>>& per_block,
                       const std::vector<std::vector<int>>& covers) {
  auto allowed = std::make_shared<collage::AllowedMatches>();
  for (size_t b = 0; b < blocks.size(); ++b)
    for (int c : covers[b])
      for (const auto& [pattern, root] : per_block[b][size_t(c)].matches)
        (*allowed)[pattern].insert(blocks[b].vars[size_t(root)].get());
  return collage::partition_restricted(std::move(mod), backends, allowed);
}

// The result's partitions and estimate from the chosen covers.
void describe(const std::vector<collage::BlockGraph>& blocks,
              const std::vector<std::vector<collage::Candidate>>& per_block,
              const std::vector<std::vector<int>>& covers, CollageResult& result) {
  for (size_t b = 0; b < blocks.size(); ++b)
    for (int c : covers[b]) {
      const collage::Candidate& cand = per_block[b][size_t(c)];
      result.estimated_us += cand.total_us();
      result.boundary_total_us += cand.boundary_us;
      if (cand.backend == "host" && !blocks[b].is_op_call[size_t(cand.nodes[0])]) continue;
      CollagePartitionInfo info;
      info.function = blocks[b].function;
      info.backend = cand.backend;
      for (int n : cand.nodes) info.vars.push_back(blocks[b].vars[size_t(n)]->name_hint);
      if (cand.matches.empty())  // the host: name the operator
        if (auto* call = blocks[b].values[size_t(cand.nodes[0])].as<CallNode>())
          if (auto* op = call->op.as<OpNode>()) info.patterns.push_back(op->name);
      for (const auto& m : cand.matches) info.patterns.push_back(m.first);
      info.cost_us = cand.total_us();
      info.measured = cand.measured;
      result.partitions.push_back(std::move(info));
    }
}

}  // namespace

const CollagePlacement* CollageResult::chosen_placement() const {
  for (const CollagePlacement& p : placements)
    if (p.name == chosen) return &p;
  return nullptr;
}

std::string CollageResult::placements_table() const {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-22s %10s %12s %11s %6s\n", "placement", "partitions", "predicted_us",
                "measured_us", "error");
  out << line;
  for (const CollagePlacement& p : placements) {
    std::string err = p.measured_us > 0 && std::isfinite(p.measured_us)
                          ? std::to_string(int(std::lround(100.0 * (p.predicted_us - p.measured_us) / p.measured_us))) + "%"
                          : "-";
    std::snprintf(line, sizeof line, "%-22s %10zu %12.1f %11.1f %6s%s\n", (p.name == "collage" ? "collage (search)" : p.name).c_str(),
                  p.partitions, p.predicted_us, p.measured_us, err.c_str(), p.name == chosen ? "  <- chosen" : "");
    out << line;
  }
  return out.str();
}

std::string CollageResult::alternatives_table() const {
  std::ostringstream out;
  char line[320];
  std::snprintf(line, sizeof line, "%-10s %-26s %-8s %9s  %s\n", "binding", "operator", "placed", "host_us",
                "backends: cheapest match holding it (us, bindings it covers)");
  out << line;
  for (const CollageAlternatives& a : alternatives) {
    std::string opts;
    for (const auto& o : a.backends) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s%s %.1f (%zu)", opts.empty() ? "" : ", ", o.pattern.c_str(), o.cost_us,
                    o.bindings);
      opts += buf;
    }
    std::snprintf(line, sizeof line, "%-10s %-26s %-8s %9.1f  %s\n", a.var.c_str(), a.op.c_str(), a.chosen.c_str(),
                  a.host_us, opts.c_str());
    out << line;
  }
  return out.str();
}

std::string CollageResult::summary() const {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %-8s %9s  %s\n", "function", "backend", "cost_us", "bindings");
  out << line;
  for (const CollagePartitionInfo& p : partitions) {
    std::string vars;
    for (const std::string& v : p.vars) vars += (vars.empty() ? "" : " ") + v;
    if (!p.patterns.empty()) {
      vars += "  [";
      for (size_t i = 0; i < p.patterns.size(); ++i) vars += (i ? " " : "") + p.patterns[i];
      vars += "]";
    }
    std::snprintf(line, sizeof line, "%-10s %-8s %9.1f%s ", p.function.c_str(), p.backend.c_str(), p.cost_us,
                  p.measured ? " " : "~");
    out << line << vars << "\n";
  }
  std::snprintf(line, sizeof line,
                "predicted %.1f us (%.1f of operators, %.1f of entering backend partitions, %.1f of a call); "
                "%zu candidates, %zu measured (%.1f s), %zu from the cost cache; search %.3f s\n",
                predicted_us(), estimated_us - boundary_total_us, boundary_total_us, call_overhead_us, candidates,
                measured, measure_s, cached, search_s);
  out << line;
  if (!boundary_us.empty()) {
    out << "entering a partition:";
    for (const auto& [b, us] : boundary_us) {
      std::snprintf(line, sizeof line, " %s %.1f us", b.c_str(), us);
      out << line;
    }
    out << "\n";
  }
  if (const CollagePlacement* p = chosen_placement(); p && p->measured_us > 0) {
    std::snprintf(line, sizeof line, "validation (%.1f s%s): chosen %s, measured %.1f us\n", validate_s,
                  p->cached ? ", from the cost cache" : "", chosen.c_str(), p->measured_us);
    out << line << placements_table();
    if (refit_boundary_us > 0) {
      std::snprintf(line, sizeof line, "fit from these runs: a backend partition costs %.1f us more in this model\n",
                    refit_boundary_us);
      out << line;
      if (!refit_against.empty()) {
        std::snprintf(line, sizeof line, "collage-refit run against %s in the same rounds: %.1f us against %.1f us\n",
                      refit_against.c_str(), placements.back().measured_us, refit_against_us);
        out << line;
      }
    }
  }
  return out.str();
}

CollageResult collage_partition(IRModule mod, const CollageOptions& options) {
  check_backends(options);
  // Every candidate would fail to run and cost infinity, and the search would place the model
  // by nothing: say so instead (device_api's message names why the device is missing).
  if (!options.device.is_cpu()) {
    try {
      runtime::device_api(options.device);
    } catch (const Error& e) {
      throw_error("RuntimeError", "CollagePartition measures candidates on " + options.device.str() +
                                      ", which this machine cannot run: " + e.what() +
                                      " (place by measurement where the device is, or name the backends)");
    }
  }
  // As partition_for: constants folded first, so candidates are what will run.
  mod = transform::FoldForInference()(std::move(mod));
  std::vector<collage::BlockGraph> blocks = collage::block_graphs(mod);
  std::vector<std::vector<collage::Candidate>> per_block(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b)
    for (int i = 0; i < blocks[b].size(); ++i) {
      collage::Candidate host;
      host.backend = "host";
      host.nodes = {i};
      per_block[b].push_back(std::move(host));
    }
  std::vector<std::vector<std::vector<collage::Candidate>>> matches;  // [backend][block]
  for (const std::string& backend : options.backends) matches.push_back(collage::pattern_candidates(mod, blocks, backend));
  for (size_t b = 0; b < blocks.size(); ++b) {
    std::set<std::pair<std::string, std::vector<int>>> seen;
    auto add = [&](collage::Candidate c) {
      if (seen.emplace(c.backend, c.nodes).second) per_block[b].push_back(std::move(c));
    };
    // The fixed placements among the candidates: each backend alone, and the backends in the
    // order given (the first gets the first pick), as their partitions would be.
    std::vector<const std::vector<collage::Candidate>*> in_order;
    for (size_t k = 0; k < matches.size(); ++k) {
      in_order.push_back(&matches[k][b]);
      for (auto& c : collage::fixed_priority_candidates(blocks[b], {&matches[k][b]})) add(std::move(c));
    }
    for (auto& c : collage::fixed_priority_candidates(blocks[b], in_order)) add(std::move(c));
    for (size_t k = 0; k < matches.size(); ++k) {
      for (auto& c : collage::merged_candidates(blocks[b], matches[k][b], options.max_merge)) add(std::move(c));
      for (const auto& c : matches[k][b]) add(c);  // copied: the fixed covers read them later
    }
  }

  CollageResult result;
  collage::CostModel costs(options);
  auto t0 = Clock::now();
  // Single matches and host operators are always measured (the search needs their costs);
  // merged candidates while the budget lasts, then from the cache or as the sum of their parts.
  for (size_t b = 0; b < blocks.size(); ++b)
    for (collage::Candidate& c : per_block[b])
      if (c.matches.size() <= 1) costs.cost(blocks[b], c, false);
  for (size_t b = 0; b < blocks.size(); ++b) {
    std::map<std::pair<std::string, int>, double> single;
    for (const collage::Candidate& c : per_block[b])
      if (c.matches.size() == 1) single[c.matches[0]] = c.cost_us;
    for (collage::Candidate& c : per_block[b]) {
      if (c.matches.size() <= 1) continue;
      costs.cost(blocks[b], c, seconds_since(t0) > options.budget_s);
      if (c.cost_us == collage::kInfinite && !c.measured) {  // not measured: the sum of its matches
        double sum = 0;
        for (const auto& m : c.matches) sum += single[m];
        c.cost_us = sum;
      }
    }
  }
  // Every partition of a backend pays for entering it (measured once per machine).
  for (const std::string& backend : options.backends) result.boundary_us[backend] = costs.boundary_us(backend);
  for (auto& cands : per_block)
    for (collage::Candidate& c : cands)
      if (c.backend != "host" && c.cost_us < collage::kInfinite) c.boundary_us = result.boundary_us[c.backend];
  result.measured = costs.measured();
  result.cached = costs.cached();
  result.measure_s = seconds_since(t0);

  auto t1 = Clock::now();
  Placement searched{"collage", {}, {}};
  for (size_t b = 0; b < blocks.size(); ++b) {
    result.candidates += per_block[b].size();
    searched.covers.push_back(collage::cheapest_cover(blocks[b], per_block[b]));
  }
  result.search_s = seconds_since(t1);
  result.call_overhead_us = costs.call_overhead_us();

  // The fixed configurations, as the cost model sees them and as `--backends` partitions them.
  std::vector<Placement> placements;
  placements.push_back(std::move(searched));
  for (const std::vector<std::string>& config : collage::fixed_configurations(options.backends)) {
    Placement p;
    for (size_t i = 0; i < config.size(); ++i) p.name += (i ? "," : "") + config[i];
    for (size_t b = 0; b < blocks.size(); ++b) {
      std::vector<const std::vector<collage::Candidate>*> in_order;
      for (const std::string& backend : config) {
        size_t k = size_t(std::find(options.backends.begin(), options.backends.end(), backend) - options.backends.begin());
        in_order.push_back(&matches[k][b]);
      }
      p.covers.push_back(collage::fixed_cover(blocks[b], per_block[b], in_order));
    }
    p.mod = mod;
    for (const std::string& backend : config) p.mod = transform::partition_for(backend, std::move(p.mod), true);
    placements.push_back(std::move(p));
  }
  placements[0].mod = placed_module(mod, options.backends, blocks, per_block, placements[0].covers);

  // A placement's prediction under the candidates' current costs and boundaries.
  auto entry_of = [&](const Placement& p) {
    CollagePlacement entry;
    entry.name = p.name;
    entry.predicted_us = result.call_overhead_us;
    for (size_t b = 0; b < blocks.size(); ++b)
      for (int c : p.covers[b]) {
        const collage::Candidate& cand = per_block[b][size_t(c)];
        entry.predicted_us += cand.total_us();
        entry.boundary_us += cand.boundary_us;
        if (cand.backend != "host") ++entry.partitions;
      }
    return entry;
  };
  size_t chosen = 0;
  for (const Placement& p : placements) result.placements.push_back(entry_of(p));
  if (options.validate) {
    auto t2 = Clock::now();
    std::vector<IRModule> mods;
    for (const Placement& p : placements) mods.push_back(p.mod);
    bool all_cached = false;
    std::vector<double> us = costs.time_placements(mods, options.validate_runs, options.validate_rounds, all_cached);
    for (size_t k = 0; k < us.size(); ++k) {
      result.placements[k].measured_us = us[k];
      result.placements[k].cached = all_cached;
      if (us[k] < us[chosen]) chosen = k;
    }
    // What a partition costs in this model beyond its parts, from the placements just run: the
    // least-squares fit of (measured - predicted) = extra x (partitions). If positive, every
    // backend partition pays it too and the search runs again; a new placement is run against
    // the fastest so far.
    double num = 0, den = 0;
    for (const CollagePlacement& e : result.placements)
      if (std::isfinite(e.measured_us) && e.partitions > 0) {
        num += double(e.partitions) * (e.measured_us - e.predicted_us);
        den += double(e.partitions) * double(e.partitions);
      }
    result.refit_boundary_us = den > 0 ? std::max(0.0, num / den) : 0;
    if (options.refit && result.refit_boundary_us > 0) {
      for (auto& cands : per_block)
        for (collage::Candidate& c : cands)
          if (c.backend != "host" && c.cost_us < collage::kInfinite) c.boundary_us += result.refit_boundary_us;
      Placement refit{"collage-refit", {}, {}};
      for (size_t b = 0; b < blocks.size(); ++b) refit.covers.push_back(collage::cheapest_cover(blocks[b], per_block[b]));
      bool is_new = true;
      for (const Placement& p : placements) is_new = is_new && p.covers != refit.covers;
      if (is_new) {
        refit.mod = placed_module(mod, options.backends, blocks, per_block, refit.covers);
        CollagePlacement entry = entry_of(refit);
        std::vector<double> pair = costs.time_placements({placements[chosen].mod, refit.mod}, options.validate_runs,
                                                         options.validate_rounds, all_cached, "refit pair");
        entry.measured_us = pair[1];
        entry.cached = all_cached;
        result.refit_against_us = pair[0];  // the fastest so far, in the same minutes as the new one
        result.refit_against = placements[chosen].name;
        placements.push_back(std::move(refit));
        result.placements.push_back(entry);
        if (pair[1] < pair[0]) chosen = placements.size() - 1;
      }
    }
    result.validate_s = seconds_since(t2);
  }
  costs.save();
  result.chosen = placements[chosen].name;
  describe(blocks, per_block, placements[chosen].covers, result);
  // The chosen placement's prediction as made before it was run (the refit's boundaries count
  // only for the placement searched with them).
  result.estimated_us = result.placements[chosen].predicted_us - result.call_overhead_us;
  result.boundary_total_us = result.placements[chosen].boundary_us;
  for (size_t b = 0; b < blocks.size(); ++b) result_alternatives(blocks[b], per_block[b], result);
  result.input = mod;
  result.mod = std::move(placements[chosen].mod);
  return result;
}

transform::Pass CollagePartition(CollageOptions options) {
  return transform::create_module_pass(
      [options](IRModule mod, const transform::PassContext&) {
        CollageResult r = collage_partition(std::move(mod), options);
        if (options.verbose) std::fprintf(stderr, "%s", r.summary().c_str());
        return r.mod;
      },
      0, "CollagePartition");
}

}  // namespace partita::codegen
