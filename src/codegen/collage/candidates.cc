// The candidates of CollagePartition: the block graphs, every pattern match of a backend (found
// by FuseOpsByPattern itself, so a match and its check are exactly what partitioning would see),
// and convex unions of adjacent matches.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "collage_internal.h"
#include "partita/ir/analysis.h"
#include "partita/transform/merge_composite_functions.h"
#include "partita/transform/pattern_registry.h"

namespace partita::codegen::collage {
namespace {

// The root of a match: the matched binding whose value is the matched expression.
const VarNode* root_of(const transform::PatternCheckContext& ctx) {
  for (const auto& [var, value] : ctx.matched_bindings)
    if (value.get() == ctx.matched_expr.get()) return var.get();
  return nullptr;
}

}  // namespace

bool BlockGraph::is_convex(const std::vector<int>& nodes) const {
  if (nodes.size() < 2) return true;
  int last = nodes.back();
  std::vector<char> in(size_t(last) + 1, 0), seen(size_t(last) + 1, 0);
  for (int n : nodes) in[size_t(n)] = 1;
  std::vector<int> stack;
  for (int n : nodes)
    for (int u : users[size_t(n)])
      if (u <= last && !in[size_t(u)] && !seen[size_t(u)]) {
        seen[size_t(u)] = 1;
        stack.push_back(u);
      }
  while (!stack.empty()) {  // everything reachable from outside the set, below its last node
    int x = stack.back();
    stack.pop_back();
    for (int u : users[size_t(x)]) {
      if (u > last) continue;
      if (in[size_t(u)]) return false;
      if (!seen[size_t(u)]) {
        seen[size_t(u)] = 1;
        stack.push_back(u);
      }
    }
  }
  return true;
}

bool BlockGraph::adjacent(const std::vector<int>& a, const std::vector<int>& b) const {
  auto feeds = [&](const std::vector<int>& from, const std::vector<int>& to) {
    for (int n : to)
      for (int i : inputs[size_t(n)])
        if (std::binary_search(from.begin(), from.end(), i)) return true;
    return false;
  };
  return feeds(a, b) || feeds(b, a);
}

std::vector<BlockGraph> block_graphs(const IRModule& mod) {
  std::vector<BlockGraph> out;
  for (const auto& [gv, expr] : mod.functions()) {
    auto* f = expr.as<FunctionNode>();
    auto* seq = f ? f->body.as<SeqExprNode>() : nullptr;
    if (!seq || !is_plain_function(*f)) continue;
    for (const BindingBlock& block : seq->blocks) {
      if (!block->is_dataflow) continue;
      BlockGraph g;
      g.function = gv->name_hint;
      for (const Binding& b : block->bindings) {
        auto* vb = b.as<VarBindingNode>();
        if (!vb) continue;  // a match_cast stays where it is, on the host
        int i = g.size();
        g.pos[vb->var.get()] = i;
        g.vars.push_back(vb->var);
        g.values.push_back(vb->value);
        auto* call = vb->value.as<CallNode>();
        g.is_op_call.push_back(call && call->op.as<OpNode>() ? 1 : 0);
        g.used_outside.push_back(vb->var.as<DataflowVarNode>() ? 0 : 1);
        g.inputs.emplace_back();
        g.users.emplace_back();
        std::set<int> ins;
        for (const Var& v : free_vars(vb->value)) {
          auto it = g.pos.find(v.get());
          if (it != g.pos.end() && it->second != i) ins.insert(it->second);
        }
        for (int j : ins) {
          g.inputs.back().push_back(j);
          g.users[size_t(j)].push_back(i);
        }
      }
      if (g.size() > 0) out.push_back(std::move(g));
    }
  }
  return out;
}

std::vector<std::vector<Candidate>> pattern_candidates(const IRModule& mod, const std::vector<BlockGraph>& blocks,
                                                       const std::string& backend) {
  std::unordered_map<const VarNode*, std::pair<int, int>> where;  // var -> (block, node)
  for (size_t b = 0; b < blocks.size(); ++b)
    for (const auto& [var, i] : blocks[b].pos) where[var] = {int(b), i};
  std::vector<std::vector<Candidate>> out(blocks.size());
  std::set<std::pair<std::string, const VarNode*>> seen;
  // Every pattern refuses every match after recording it: the module is left as it is, and
  // each pattern sees the block unchanged by the others.
  std::vector<transform::FusionPattern> patterns = transform::get_patterns_with_prefix(backend + ".");
  for (transform::FusionPattern& p : patterns) {
    auto check = p.check;
    std::string name = p.name;
    p.check = [&, check, name](const transform::PatternCheckContext& ctx) {
      if (check && !check(ctx)) return false;
      const VarNode* root = root_of(ctx);
      auto r = root ? where.find(root) : where.end();
      if (r == where.end() || !seen.emplace(name, root).second) return false;
      Candidate c;
      c.backend = backend;
      for (const auto& [var, value] : ctx.matched_bindings) {
        auto w = where.find(var.get());
        if (w == where.end() || w->second.first != r->second.first) return false;
        c.nodes.push_back(w->second.second);
      }
      std::sort(c.nodes.begin(), c.nodes.end());
      c.matches.emplace_back(name, r->second.second);
      if (blocks[size_t(r->second.first)].is_convex(c.nodes)) out[size_t(r->second.first)].push_back(std::move(c));
      return false;
    };
  }
  transform::fuse_ops_by_pattern(patterns, mod, /*bind_constants=*/true, /*annotate_codegen=*/false);
  return out;
}

std::vector<Candidate> merged_candidates(const BlockGraph& g, const std::vector<Candidate>& matches, int max_merge) {
  std::vector<Candidate> out;
  std::set<std::vector<int>> seen;
  for (const Candidate& c : matches) seen.insert(c.nodes);
  std::vector<Candidate> frontier = matches;
  // A union grows by one adjacent, disjoint match at a time; the number kept per round is
  // bounded so that dense graphs stay tractable.
  const size_t cap = size_t(8 * g.size() + 64);
  for (int round = 1; round < max_merge && !frontier.empty(); ++round) {
    std::vector<Candidate> next;
    for (const Candidate& a : frontier) {
      for (const Candidate& m : matches) {
        if (m.matches.front().second <= a.matches.back().second) continue;  // roots ascending: each union once
        std::vector<int> both;
        std::set_union(a.nodes.begin(), a.nodes.end(), m.nodes.begin(), m.nodes.end(), std::back_inserter(both));
        if (both.size() != a.nodes.size() + m.nodes.size() || !g.adjacent(a.nodes, m.nodes)) continue;
        if (!g.is_convex(both) || !seen.insert(both).second) continue;
        Candidate u = a;
        u.nodes = std::move(both);
        u.matches.push_back(m.matches.front());
        next.push_back(std::move(u));
        if (next.size() >= cap) break;
      }
      if (next.size() >= cap) break;
    }
    for (const Candidate& c : next) out.push_back(c);
    frontier = std::move(next);
  }
  return out;
}

std::vector<Candidate> fixed_priority_candidates(const BlockGraph& g,
                                                 const std::vector<const std::vector<Candidate>*>& matches,
                                                 bool with_single) {
  std::vector<char> taken(size_t(g.size()), 0);
  std::vector<const Candidate*> chosen;
  for (const std::vector<Candidate>* list : matches)
    for (const Candidate& m : *list) {
      bool free = true;
      for (int n : m.nodes) free = free && !taken[size_t(n)];
      if (!free) continue;
      for (int n : m.nodes) taken[size_t(n)] = 1;
      chosen.push_back(&m);
    }
  // Connected groups of one backend's taken matches (union-find over adjacent pairs).
  std::vector<int> parent(chosen.size());
  for (size_t i = 0; i < chosen.size(); ++i) parent[i] = int(i);
  std::function<int(int)> find = [&](int x) { return parent[size_t(x)] == x ? x : parent[size_t(x)] = find(parent[size_t(x)]); };
  std::vector<int> owner(size_t(g.size()), -1);
  for (size_t i = 0; i < chosen.size(); ++i)
    for (int n : chosen[i]->nodes) owner[size_t(n)] = int(i);
  for (int n = 0; n < g.size(); ++n)
    for (int u : g.users[size_t(n)]) {
      int a = owner[size_t(n)], b = owner[size_t(u)];
      if (a >= 0 && b >= 0 && a != b && chosen[size_t(a)]->backend == chosen[size_t(b)]->backend)
        parent[size_t(find(a))] = find(b);
    }
  // Within each connected group, matches in binding order join the first group of theirs they
  // touch whose union stays convex, else start one (as MergeCompositeFunctions splits around a
  // binding of another backend or the host that would make a cycle).
  std::vector<size_t> order(chosen.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return chosen[a]->nodes.front() < chosen[b]->nodes.front(); });
  std::map<int, std::vector<Candidate>> groups;  // per connected group
  for (size_t i : order) {
    std::vector<Candidate>& mine = groups[find(int(i))];
    const Candidate& m = *chosen[i];
    bool placed = false;
    for (Candidate& c : mine) {
      if (!g.adjacent(c.nodes, m.nodes)) continue;
      std::vector<int> both;
      std::set_union(c.nodes.begin(), c.nodes.end(), m.nodes.begin(), m.nodes.end(), std::back_inserter(both));
      if (!g.is_convex(both)) continue;
      c.nodes = std::move(both);
      c.matches.push_back(m.matches.front());
      placed = true;
      break;
    }
    if (!placed) mine.push_back(m);
  }
  std::vector<Candidate> out;
  for (auto& [root, list] : groups)
    for (Candidate& c : list)
      if (with_single || c.matches.size() > 1) {
        std::sort(c.matches.begin(), c.matches.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
        out.push_back(std::move(c));
      }
  return out;
}

std::vector<std::vector<std::string>> fixed_configurations(const std::vector<std::string>& backends) {
  std::vector<std::vector<std::string>> out;
  for (const std::string& b : backends) out.push_back({b});
  if (backends.size() > 1) {
    out.push_back(backends);
    out.emplace_back(backends.rbegin(), backends.rend());
  }
  return out;
}

std::vector<int> fixed_cover(const BlockGraph& g, const std::vector<Candidate>& candidates,
                             const std::vector<const std::vector<Candidate>*>& matches) {
  std::map<std::pair<std::string, std::vector<int>>, int> index;
  for (size_t c = 0; c < candidates.size(); ++c) index.emplace(std::pair(candidates[c].backend, candidates[c].nodes), int(c));
  std::vector<char> covered(size_t(g.size()), 0);
  std::vector<int> out;
  for (const Candidate& p : fixed_priority_candidates(g, matches, /*with_single=*/true)) {
    auto it = index.find({p.backend, p.nodes});
    if (it == index.end()) continue;  // not among the candidates: its bindings go to the host
    out.push_back(it->second);
    for (int n : p.nodes) covered[size_t(n)] = 1;
  }
  for (int n = 0; n < g.size(); ++n)
    if (!covered[size_t(n)]) out.push_back(n);  // the host's candidate for binding n
  std::sort(out.begin(), out.end(),
            [&](int a, int b) { return candidates[size_t(a)].nodes.front() < candidates[size_t(b)].nodes.front(); });
  return out;
}

std::vector<transform::FusionPattern> restricted_patterns(const std::vector<std::string>& backends,
                                                          std::shared_ptr<const AllowedMatches> allowed) {
  std::vector<transform::FusionPattern> out;
  for (const std::string& b : backends)
    for (transform::FusionPattern p : transform::get_patterns_with_prefix(b + ".")) {
      auto it = allowed->find(p.name);
      if (it == allowed->end()) continue;
      auto check = p.check;
      const std::set<const VarNode*>* roots = &it->second;
      p.check = [allowed, roots, check](const transform::PatternCheckContext& ctx) {
        const VarNode* root = root_of(ctx);
        return root && roots->count(root) && (!check || check(ctx));
      };
      out.push_back(std::move(p));
    }
  return out;
}

IRModule partition_restricted(IRModule mod, const std::vector<std::string>& backends,
                              std::shared_ptr<const AllowedMatches> allowed) {
  auto patterns = restricted_patterns(backends, std::move(allowed));
  if (patterns.empty()) return mod;
  mod = transform::fuse_ops_by_pattern(patterns, std::move(mod), /*bind_constants=*/true, /*annotate_codegen=*/false);
  return transform::merge_composite_functions(std::move(mod));
}

}  // namespace partita::codegen::collage
