// The search of CollagePartition: the cheapest cover of a block's bindings by disjoint
// candidates, as a shortest path. A state is the set of covered bindings; a step covers the
// first uncovered binding with a candidate that starts there (all bindings before it are
// covered, so any other candidate holding it would overlap) — Collage's rule, which makes every
// cover reachable exactly once in order of its first nodes.
#include <algorithm>
#include <functional>
#include <set>
#include <queue>
#include <unordered_map>

#include "collage_internal.h"
#include "partita/runtime/serialize.h"

namespace partita::codegen::collage {
namespace {

struct State {
  std::vector<uint64_t> covered;
  int first_uncovered = 0;
};

struct StateHash {
  size_t operator()(const std::vector<uint64_t>& bits) const {
    return size_t(runtime::fnv1a64({reinterpret_cast<const char*>(bits.data()), bits.size() * sizeof(uint64_t)}));
  }
};

bool test(const std::vector<uint64_t>& bits, int i) { return (bits[size_t(i) / 64] >> (i % 64)) & 1; }
void set(std::vector<uint64_t>& bits, int i) { bits[size_t(i) / 64] |= uint64_t(1) << (i % 64); }

// A state explored more than this many times gives up the exact search for a greedy choice
// (each binding's cheapest candidate in order), which is always a valid cover.
constexpr size_t kMaxStates = 1 << 20;

std::vector<int> greedy_cover(const BlockGraph& g, const std::vector<std::vector<int>>& starting,
                              const std::vector<Candidate>& candidates) {
  std::vector<char> covered(size_t(g.size()), 0);
  std::vector<int> out;
  for (int i = 0; i < g.size(); ++i) {
    if (covered[size_t(i)]) continue;
    int best = -1;
    for (int c : starting[size_t(i)]) {
      bool free = true;
      for (int n : candidates[size_t(c)].nodes) free = free && !covered[size_t(n)];
      double per_node = candidates[size_t(c)].total_us() / double(candidates[size_t(c)].nodes.size());
      if (free && (best < 0 || per_node < candidates[size_t(best)].total_us() / double(candidates[size_t(best)].nodes.size())))
        best = c;
    }
    for (int n : candidates[size_t(best)].nodes) covered[size_t(n)] = 1;
    out.push_back(best);
  }
  return out;
}

// The search without the cycle rule.
std::vector<int> shortest_cover(const BlockGraph& g, const std::vector<Candidate>& candidates) {
  const int n = g.size();
  std::vector<std::vector<int>> starting(static_cast<size_t>(n));
  for (size_t c = 0; c < candidates.size(); ++c)
    if (candidates[c].cost_us < kInfinite) starting[size_t(candidates[c].nodes.front())].push_back(int(c));
  for (int i = 0; i < n; ++i)
    if (starting[size_t(i)].empty())
      throw_error("ValueError", "CollagePartition: no candidate covers binding '" + g.vars[size_t(i)]->name_hint + "'");

  struct Record {
    int parent;
    int candidate;
    double cost;
    State state;
  };
  std::vector<Record> records;
  std::unordered_map<std::vector<uint64_t>, int, StateHash> best;  // state -> record
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  State start{std::vector<uint64_t>(size_t(n + 63) / 64, 0), 0};
  records.push_back({-1, -1, 0.0, start});
  best[start.covered] = 0;
  queue.push({0.0, 0});
  while (!queue.empty()) {
    auto [cost, r] = queue.top();
    queue.pop();
    const State st = records[size_t(r)].state;
    if (best.at(st.covered) != r) continue;  // a cheaper way here was found after pushing
    if (st.first_uncovered == n) {
      std::vector<int> out;
      for (int x = r; records[size_t(x)].parent >= 0; x = records[size_t(x)].parent)
        out.push_back(records[size_t(x)].candidate);
      std::reverse(out.begin(), out.end());
      return out;
    }
    if (records.size() > kMaxStates) return greedy_cover(g, starting, candidates);
    for (int c : starting[size_t(st.first_uncovered)]) {
      const Candidate& cand = candidates[size_t(c)];
      bool free = true;
      for (int node : cand.nodes) free = free && !test(st.covered, node);
      if (!free) continue;
      State next = st;
      for (int node : cand.nodes) set(next.covered, node);
      while (next.first_uncovered < n && test(next.covered, next.first_uncovered)) ++next.first_uncovered;
      double next_cost = cost + cand.total_us();
      auto it = best.find(next.covered);
      if (it != best.end() && records[size_t(it->second)].cost <= next_cost) continue;
      int id = int(records.size());
      records.push_back({r, c, next_cost, next});
      best[records.back().state.covered] = id;
      queue.push({next_cost, id});
    }
  }
  throw_error("ValueError", "CollagePartition: the search found no cover of function '" + g.function + "'");
}

}  // namespace

int candidate_in_cycle(const BlockGraph& g, const std::vector<Candidate>& candidates, const std::vector<int>& cover) {
  std::vector<int> part(size_t(g.size()), -1);
  for (size_t k = 0; k < cover.size(); ++k)
    for (int n : candidates[size_t(cover[k])].nodes) part[size_t(n)] = int(k);
  std::vector<std::set<int>> succ(cover.size());
  for (int n = 0; n < g.size(); ++n)
    for (int u : g.users[size_t(n)])
      if (part[size_t(u)] != part[size_t(n)]) succ[size_t(part[size_t(n)])].insert(part[size_t(u)]);
  // Depth-first search for a back edge; the multi-binding partition on it is the one to drop.
  std::vector<int> state(cover.size(), 0), path;
  std::function<int(int)> visit = [&](int k) -> int {
    state[size_t(k)] = 1;
    path.push_back(k);
    for (int s : succ[size_t(k)]) {
      if (state[size_t(s)] == 1) {
        for (auto it = std::find(path.begin(), path.end(), s); it != path.end(); ++it)
          if (candidates[size_t(cover[size_t(*it)])].nodes.size() > 1) return cover[size_t(*it)];
      }
      if (state[size_t(s)] == 0)
        if (int found = visit(s); found >= 0) return found;
    }
    state[size_t(k)] = 2;
    path.pop_back();
    return -1;
  };
  for (size_t k = 0; k < cover.size(); ++k)
    if (state[k] == 0)
      if (int found = visit(int(k)); found >= 0) return found;
  return -1;
}

std::vector<int> cheapest_cover(const BlockGraph& g, std::vector<Candidate> candidates) {
  for (;;) {
    std::vector<int> cover = shortest_cover(g, candidates);
    int bad = candidate_in_cycle(g, candidates, cover);
    if (bad < 0) return cover;
    candidates[size_t(bad)].cost_us = kInfinite;
  }
}

}  // namespace partita::codegen::collage
