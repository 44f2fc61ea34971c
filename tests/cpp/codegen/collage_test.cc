// CollagePartition: the search over given costs, convexity of candidates, the placement of a
// real model on dnnl against the host by measurement, the persistent cost cache, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "../../../src/codegen/collage/collage_internal.h"
#include "partita/backend/registry.h"
#include "partita/codegen/build.h"
#include "partita/codegen/collage.h"
#include "partita/ir/analysis.h"
#include "partita/ir/structural_equal.h"
#include "partita/runtime/device_api.h"
#include "partita/runtime/vm.h"
#include "partita/script/parser.h"
#include "partita/support/error.h"
#include "partita/transform/fold_constant.h"
#include "partita/transform/pattern_registry.h"
#include <nlohmann/json.hpp>

using namespace partita;
using namespace partita::codegen;

namespace {

// a -> b -> d and a -> c -> d: {a, d} is not convex (the path through b or c leaves it).
const char* kDiamond = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 4), dtype="float32")) -> R.Tensor((4, 4), dtype="float32"):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.exp(a)
            c = R.sin(a)
            d = R.add(b, c)
            R.output(d)
        return d
)";

collage::Candidate cand(const std::string& backend, std::vector<int> nodes, double cost) {
  collage::Candidate c;
  c.backend = backend;
  c.nodes = std::move(nodes);
  c.cost_us = cost;
  c.measured = true;
  return c;
}

TEST(Collage, ConvexityFollowsPathsThroughOtherBindings) {
  auto blocks = collage::block_graphs(script::parse_module(kDiamond));
  ASSERT_EQ(blocks.size(), 1u);
  const collage::BlockGraph& g = blocks[0];
  ASSERT_EQ(g.size(), 4);
  EXPECT_TRUE(g.is_convex({0, 1}));
  EXPECT_TRUE(g.is_convex({1, 2, 3}));
  EXPECT_TRUE(g.is_convex({0, 1, 2, 3}));
  EXPECT_FALSE(g.is_convex({0, 3}));
  EXPECT_FALSE(g.is_convex({0, 1, 3}));  // c leaves and re-enters
  EXPECT_TRUE(g.adjacent({0}, {2}));
  EXPECT_FALSE(g.adjacent({1}, {2}));
}

TEST(Collage, SearchFindsTheCheapestDisjointCover) {
  auto blocks = collage::block_graphs(script::parse_module(kDiamond));
  const collage::BlockGraph& g = blocks[0];
  std::vector<collage::Candidate> cs = {cand("host", {0}, 10), cand("host", {1}, 10), cand("host", {2}, 10),
                                        cand("host", {3}, 10), cand("x", {0, 1}, 12), cand("x", {1, 2, 3}, 15),
                                        cand("x", {2, 3}, 1)};
  // Host alone costs 40; {a,b} + {c,d} costs 13; a + {b,c,d} costs 25.
  std::vector<int> cover = collage::cheapest_cover(g, cs);
  ASSERT_EQ(cover.size(), 2u);
  EXPECT_EQ(cover[0], 4);
  EXPECT_EQ(cover[1], 6);
  // An impossible candidate is never chosen, however cheap its parts would make it.
  cs[6].cost_us = collage::kInfinite;
  cover = collage::cheapest_cover(g, cs);
  double total = 0;
  for (int c : cover) total += cs[size_t(c)].cost_us;
  EXPECT_DOUBLE_EQ(total, 25.0);
}

// A random DAG of `n` bindings (edges from lower to higher positions).
collage::BlockGraph random_graph(int n, std::mt19937& rng) {
  collage::BlockGraph g;
  g.function = "main";
  for (int i = 0; i < n; ++i) {
    g.vars.push_back(make<VarNode>("v" + std::to_string(i), StructInfo()));
    g.values.push_back(Expr());
    g.is_op_call.push_back(1);
    g.used_outside.push_back(i == n - 1);
    g.inputs.emplace_back();
    g.users.emplace_back();
    for (int j = 0; j < i; ++j)
      if (rng() % 3 == 0) {
        g.inputs.back().push_back(j);
        g.users[size_t(j)].push_back(i);
      }
  }
  return g;
}

// The cheapest cover by exhaustive enumeration (with or without the no-cycle rule).
double brute_force(const collage::BlockGraph& g, const std::vector<collage::Candidate>& cs, bool acyclic,
                   std::vector<char>& covered, std::vector<int>& chosen) {
  int first = 0;
  while (first < g.size() && covered[size_t(first)]) ++first;
  if (first == g.size())
    return !acyclic || collage::candidate_in_cycle(g, cs, chosen) < 0 ? 0.0 : collage::kInfinite;
  double best = collage::kInfinite;
  for (size_t c = 0; c < cs.size(); ++c) {
    const auto& nodes = cs[c].nodes;
    if (std::find(nodes.begin(), nodes.end(), first) == nodes.end()) continue;
    bool free = true;
    for (int n : nodes) free = free && !covered[size_t(n)];
    if (!free) continue;
    for (int n : nodes) covered[size_t(n)] = 1;
    chosen.push_back(int(c));
    best = std::min(best, cs[c].total_us() + brute_force(g, cs, acyclic, covered, chosen));
    chosen.pop_back();
    for (int n : nodes) covered[size_t(n)] = 0;
  }
  return best;
}

TEST(Collage, SearchAgreesWithBruteForceOnRandomGraphs) {
  std::mt19937 rng(2026);
  std::uniform_real_distribution<double> cost(1.0, 30.0);  // real costs: no ties
  int cyclic_optimum = 0;
  for (int trial = 0; trial < 300; ++trial) {
    int n = 3 + int(rng() % 8);
    collage::BlockGraph g = random_graph(n, rng);
    std::vector<collage::Candidate> cs;
    for (int i = 0; i < n; ++i) cs.push_back(cand("host", {i}, cost(rng)));
    for (int k = 0; k < 2 * n; ++k) {  // random convex sets of 2 to 4 bindings
      std::set<int> s;
      int size = 2 + int(rng() % 3);
      while (int(s.size()) < std::min(size, n)) s.insert(int(rng() % unsigned(n)));
      std::vector<int> nodes(s.begin(), s.end());
      if (g.is_convex(nodes)) cs.push_back(cand("x", nodes, cost(rng)));
      if (trial % 2 && !cs.back().nodes.empty() && cs.back().backend == "x") cs.back().boundary_us = cost(rng) / 4;
    }
    std::vector<char> covered(size_t(n), 0);
    std::vector<int> chosen;
    double best = brute_force(g, cs, true, covered, chosen);
    double best_ignoring_cycles = brute_force(g, cs, false, covered, chosen);
    std::vector<int> cover = collage::cheapest_cover(g, cs);
    double got = 0;
    std::vector<int> count(size_t(n), 0);
    for (int c : cover) {
      got += cs[size_t(c)].total_us();
      for (int node : cs[size_t(c)].nodes) ++count[size_t(node)];
    }
    for (int node = 0; node < n; ++node) ASSERT_EQ(count[size_t(node)], 1) << "trial " << trial;
    ASSERT_EQ(collage::candidate_in_cycle(g, cs, cover), -1) << "trial " << trial;
    if (best == best_ignoring_cycles) {
      ASSERT_NEAR(got, best, 1e-9) << "trial " << trial;  // the optimum is acyclic: found exactly
    } else {
      // The search drops a candidate of a cyclic optimum and searches again, which may also
      // exclude the best acyclic cover using it: valid, never cheaper than the optimum.
      ++cyclic_optimum;
      ASSERT_GE(got, best - 1e-9) << "trial " << trial;
    }
  }
  EXPECT_LT(cyclic_optimum, 30);
}

TEST(Collage, CyclesBetweenConvexCandidatesAreFound) {
  // a1 -> a2, b1 -> b2, a1 -> b2, b1 -> a2 (order a1 b1 a2 b2): {a1, a2} and {b1, b2} are each
  // convex, but as partitions each feeds the other.
  collage::BlockGraph g;
  std::mt19937 rng(1);
  g = random_graph(4, rng);
  for (auto& v : g.inputs) v.clear();
  for (auto& v : g.users) v.clear();
  auto edge = [&](int a, int b) {
    g.inputs[size_t(b)].push_back(a);
    g.users[size_t(a)].push_back(b);
  };
  edge(0, 2);
  edge(1, 3);
  edge(0, 3);
  edge(1, 2);
  std::vector<collage::Candidate> cs = {cand("host", {0}, 10), cand("host", {1}, 10), cand("host", {2}, 10),
                                        cand("host", {3}, 10), cand("x", {0, 2}, 1),  cand("x", {1, 3}, 1)};
  EXPECT_TRUE(g.is_convex({0, 2}));
  EXPECT_TRUE(g.is_convex({1, 3}));
  EXPECT_GE(collage::candidate_in_cycle(g, cs, {4, 5}), 4);
  std::vector<int> cover = collage::cheapest_cover(g, cs);
  double total = 0;
  for (int c : cover) total += cs[size_t(c)].cost_us;
  EXPECT_DOUBLE_EQ(total, 21.0);  // one of the two, the other two bindings on the host
}

TEST(Collage, UnionsOfMatchesStayConvexAndDisjoint) {
  auto blocks = collage::block_graphs(script::parse_module(kDiamond));
  const collage::BlockGraph& g = blocks[0];
  std::vector<collage::Candidate> matches;
  for (int i : {0, 1, 3}) {  // a backend that takes a, b and d but not c
    collage::Candidate c = cand("x", {i}, 1);
    c.matches = {{"x.op", i}};
    matches.push_back(c);
  }
  auto merged = collage::merged_candidates(g, matches, 3);
  ASSERT_EQ(merged.size(), 2u);  // {a, b} and {b, d}; never {a, b, d} (c re-enters) nor {a, d}
  for (const auto& m : merged) {
    EXPECT_TRUE(g.is_convex(m.nodes));
    EXPECT_EQ(m.matches.size(), 2u);
  }
}

TEST(Collage, FixedPriorityPartitionsAreCandidates) {
  auto blocks = collage::block_graphs(script::parse_module(kDiamond));
  const collage::BlockGraph& g = blocks[0];
  auto matches_of = [](const std::string& backend, std::vector<std::vector<int>> sets) {
    std::vector<collage::Candidate> out;
    for (auto& nodes : sets) {
      collage::Candidate c = cand(backend, nodes, 1);
      c.matches = {{backend + ".op", nodes.back()}};
      out.push_back(c);
    }
    return out;
  };
  // One backend matching everything: one partition of all four bindings.
  auto all = matches_of("x", {{0}, {1}, {2}, {3}});
  auto fixed = collage::fixed_priority_candidates(g, {&all});
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_EQ(fixed[0].nodes, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(fixed[0].matches.size(), 4u);
  // Without c, {a, b, d} is not convex: it splits into {a, b} and d alone, as
  // MergeCompositeFunctions would split it.
  auto no_c = matches_of("x", {{0}, {1}, {3}});
  auto split = collage::fixed_priority_candidates(g, {&no_c});
  ASSERT_EQ(split.size(), 1u);
  EXPECT_EQ(split[0].nodes, (std::vector<int>{0, 1}));
  // Priority: y takes b and c first (one match), x gets what is left; a and d alone are not groups.
  auto y = matches_of("y", {{1, 2}});
  auto both = collage::fixed_priority_candidates(g, {&y, &all});
  EXPECT_TRUE(both.empty());  // y's group is one match, x's matches a and d are not adjacent
  auto x_first = collage::fixed_priority_candidates(g, {&all, &y});
  ASSERT_EQ(x_first.size(), 1u);
  EXPECT_EQ(x_first[0].backend, "x");
}

TEST(Collage, BoundaryCostsFavourFewerPartitions) {
  auto blocks = collage::block_graphs(script::parse_module(kDiamond));
  const collage::BlockGraph& g = blocks[0];
  std::vector<collage::Candidate> cs = {cand("host", {0}, 10), cand("host", {1}, 10), cand("host", {2}, 10),
                                        cand("host", {3}, 10), cand("x", {0, 1}, 4),   cand("x", {2, 3}, 4),
                                        cand("x", {0, 1, 2, 3}, 9)};
  // Alone, two partitions (8) beat one (9); paying 3 to enter each, one (12) beats two (14).
  EXPECT_EQ(collage::cheapest_cover(g, cs), (std::vector<int>{4, 5}));
  for (size_t c = 4; c < cs.size(); ++c) cs[c].boundary_us = 3;
  EXPECT_EQ(collage::cheapest_cover(g, cs), (std::vector<int>{6}));
}

TEST(Collage, FixedConfigurationsAreEachBackendAloneAndBothOrders) {
  using Configs = std::vector<std::vector<std::string>>;
  EXPECT_EQ(collage::fixed_configurations({"dnnl"}), (Configs{{"dnnl"}}));
  EXPECT_EQ(collage::fixed_configurations({"dnnl", "cblas"}),
            (Configs{{"dnnl"}, {"cblas"}, {"dnnl", "cblas"}, {"cblas", "dnnl"}}));
}

TEST(Collage, FixedCoverIsTheConfigurationsPartitionsAndTheHost) {
  auto blocks = collage::block_graphs(script::parse_module(kDiamond));
  const collage::BlockGraph& g = blocks[0];
  std::vector<collage::Candidate> cs;
  for (int i = 0; i < 4; ++i) cs.push_back(cand("host", {i}, 10));
  auto match = [](const std::string& backend, std::vector<int> nodes) {
    collage::Candidate c = cand(backend, nodes, 1);
    c.matches = {{backend + ".op", nodes.back()}};
    return c;
  };
  std::vector<collage::Candidate> x = {match("x", {0}), match("x", {1}), match("x", {3})};  // not c
  std::vector<collage::Candidate> y = {match("y", {2})};
  for (const auto& c : x) cs.push_back(c);
  cs.push_back(y[0]);
  collage::Candidate ab = cand("x", {0, 1}, 1);
  ab.matches = {{"x.op", 0}, {"x.op", 1}};
  cs.push_back(ab);  // index 8: x's partition {a, b}
  // x alone: {a, b} as one partition, d as its own, c on the host.
  EXPECT_EQ(collage::fixed_cover(g, cs, {&x}), (std::vector<int>{8, 2, 6}));
  // y first, then x: c on y as well.
  EXPECT_EQ(collage::fixed_cover(g, cs, {&y, &x}), (std::vector<int>{8, 7, 6}));
  // A partition that is not among the candidates leaves its bindings to the host.
  cs.pop_back();
  EXPECT_EQ(collage::fixed_cover(g, cs, {&x}), (std::vector<int>{0, 1, 2, 6}));
}

TEST(Collage, ErrorsNameTheBackend) {
  IRModule mod = script::parse_module(kDiamond);
  CollageOptions o;
  o.cost_cache = "none";
  try {
    collage_partition(mod, o);
    FAIL() << "no backends accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
  }
  o.backends = {"no_such_backend"};
  try {
    collage_partition(mod, o);
    FAIL() << "an unknown backend accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "KeyError");
    EXPECT_NE(std::string(e.what()).find("no_such_backend"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("registered:"), std::string::npos);
  }
}

// Measuring on a device this machine lacks is an error naming it, not a placement by costs
// that are all infinite.
TEST(Collage, AMissingDeviceIsAnError) {
  if (runtime::device_exists(Device::cuda(0))) GTEST_SKIP() << "this machine has cuda:0";
  if (!backend::find_backend("dnnl")) GTEST_SKIP() << "built without the dnnl backend";
  CollageOptions o;
  o.backends = {"dnnl"};
  o.cost_cache = "none";
  o.device = Device::cuda(0);
  try {
    collage_partition(script::parse_module(kDiamond), o);
    FAIL() << "placed by measurement on a missing device";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "RuntimeError");
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
}

// A squeeze-excitation block as regnet and efficientnet have it: the placement must run, be
// well formed and compute what the host computes, whatever it chooses.
const char* kSqueezeExcite = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 32, 28, 28), dtype="float32"), w: R.Tensor((32, 32, 3, 3), dtype="float32"), w1: R.Tensor((8, 32, 1, 1), dtype="float32"), w2: R.Tensor((32, 8, 1, 1), dtype="float32")) -> R.Tensor((1, 32, 28, 28), dtype="float32"):
        with R.dataflow():
            lv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            lv1 = R.nn.relu(lv)
            lv2 = R.mean(lv1, axis=[2, 3], keepdims=True)
            lv3 = R.nn.conv2d(lv2, w1)
            lv4 = R.nn.relu(lv3)
            lv5 = R.nn.conv2d(lv4, w2)
            lv6 = R.sigmoid(lv5)
            lv7 = R.multiply(lv1, lv6)
            lv8 = R.add(lv7, x)
            R.output(lv8)
        return lv8
)";

std::vector<Tensor> se_inputs() {
  std::vector<Tensor> in;
  for (auto shape : {std::vector<int64_t>{1, 32, 28, 28}, {32, 32, 3, 3}, {8, 32, 1, 1}, {32, 8, 1, 1}}) {
    Tensor t = Tensor::empty(shape, DataType::Float(32));
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = float((i * 7919) % 17) / 17.0f - 0.5f;
    in.push_back(t);
  }
  return in;
}

TEST(Collage, PlacesARealBlockOnDnnlAndTheHostByMeasurement) {
  if (!backend::find_backend("dnnl")) GTEST_SKIP() << "built without the dnnl backend";
  IRModule mod = script::parse_module(kSqueezeExcite);
  std::string cache = (std::filesystem::temp_directory_path() / "partita_collage_test_costs.json").string();
  std::filesystem::remove(cache);
  CollageOptions o;
  o.backends = {"dnnl"};
  o.cost_cache = cache;
  o.repeats = 3;
  o.refit = false;  // tested below
  CollageResult first = collage_partition(mod, o);
  EXPECT_TRUE(well_formed(first.mod));
  EXPECT_GT(first.measured, 0u);
  EXPECT_GT(first.candidates, 9u);  // the host for each binding, and dnnl's matches
  EXPECT_FALSE(first.partitions.empty());
  EXPECT_TRUE(std::isfinite(first.estimated_us));
  ASSERT_TRUE(std::filesystem::exists(cache));

  auto host = runtime::VirtualMachine(build(mod)).invoke("main", se_inputs());
  auto placed = runtime::VirtualMachine(build(first.mod)).invoke("main", se_inputs());
  ASSERT_EQ(placed.size(), 1u);
  for (int64_t i = 0; i < host[0].numel(); ++i)
    ASSERT_NEAR(placed[0].data_as<float>()[i], host[0].data_as<float>()[i], 1e-3f) << "element " << i;

  // A second placement reads every cost from the cache and measures nothing.
  CollageResult second = collage_partition(mod, o);
  EXPECT_EQ(second.measured, 0u);
  EXPECT_EQ(second.cached, first.measured + first.cached);
  EXPECT_TRUE(structural_equal(second.mod, first.mod));
  // Validation ran the search's placement and dnnl alone end to end, and returned the faster.
  ASSERT_EQ(first.placements.size(), 2u);
  EXPECT_EQ(first.placements[0].name, "collage");
  EXPECT_EQ(first.placements[1].name, "dnnl");
  ASSERT_NE(first.chosen_placement(), nullptr);
  for (const CollagePlacement& p : first.placements) {
    EXPECT_TRUE(std::isfinite(p.measured_us) && p.measured_us > 0) << p.name;
    EXPECT_GE(p.measured_us, first.chosen_placement()->measured_us) << p.name;
    EXPECT_FALSE(p.cached);
  }
  ASSERT_TRUE(first.boundary_us.count("dnnl"));
  EXPECT_GE(first.boundary_us.at("dnnl"), 0.0);
  EXPECT_TRUE(second.placements[0].cached);
  EXPECT_EQ(second.chosen, first.chosen);
  EXPECT_DOUBLE_EQ(second.boundary_us.at("dnnl"), first.boundary_us.at("dnnl"));  // from the cache
  // A target option is part of every cost's key: changing it measures the backend again.
  o.targets = {Target("dnnl", {{"num_threads", int64_t(1)}})};
  CollageResult third = collage_partition(mod, o);
  EXPECT_GT(third.measured, 0u);
  EXPECT_FALSE(third.placements[0].cached);
  std::filesystem::remove(cache);
}

// Two placements that are the same module (the search's cover equal to a fixed configuration)
// are timed once and get one time, so the choice between them cannot flip with noise, nor
// between a placement and its cached repeat (under ASan the first run chose dnnl by noise, and
// the repeat, reading the one cached value both share, chose the search's).
TEST(Collage, IdenticalPlacementsAreTimedOnce) {
  IRModule mod = script::parse_module(kSqueezeExcite);
  std::string cache = (std::filesystem::temp_directory_path() / "partita_collage_identical_costs.json").string();
  std::filesystem::remove(cache);
  CollageOptions o;
  o.cost_cache = cache;
  collage::CostModel costs(o);
  bool all_cached = true;
  std::vector<double> us = costs.time_placements({mod, mod}, 3, 2, all_cached);
  EXPECT_FALSE(all_cached);
  ASSERT_EQ(us.size(), 2u);
  EXPECT_TRUE(std::isfinite(us[0]) && us[0] > 0);
  EXPECT_EQ(us[0], us[1]);
  std::vector<double> again = costs.time_placements({mod, mod}, 3, 2, all_cached);
  EXPECT_TRUE(all_cached);
  EXPECT_EQ(again, us);
  std::filesystem::remove(cache);
}

// The placement returned is the one validation measured fastest: with the cached end-to-end
// times rewritten, the choice follows them.
TEST(Collage, ValidationReturnsTheFastestMeasuredPlacement) {
  if (!backend::find_backend("dnnl")) GTEST_SKIP() << "built without the dnnl backend";
  IRModule mod = script::parse_module(kSqueezeExcite);
  std::string cache = (std::filesystem::temp_directory_path() / "partita_collage_validation_costs.json").string();
  std::filesystem::remove(cache);
  CollageOptions o;
  o.backends = {"dnnl"};
  o.cost_cache = cache;
  o.repeats = 3;
  o.validate_runs = 2;
  o.validate_rounds = 2;
  o.refit = false;  // the choice among the placements as cached, nothing run again
  collage_partition(mod, o);
  std::set<std::string> choices;
  std::map<std::string, double> last_times;  // the cached end-to-end times of the last round
  for (double slow_first : {1.0, -1.0}) {
    nlohmann::json costs;
    std::ifstream(cache) >> costs;
    std::vector<std::string> keys;
    for (auto& [key, value] : costs.items())
      if (key.rfind("placement ", 0) == 0) keys.push_back(key);
    // Where the search's own placement is dnnl alone (seen under ASan, whose host kernels are
    // slow), there is one placement and no choice to test.
    if (keys.size() == 1u)
      GTEST_SKIP() << "the search placed everything on dnnl here: one placement, no choice to test";
    ASSERT_EQ(keys.size(), 2u);  // the search's and dnnl alone's
    // Seconds: far above any candidate's measured cost, even on a loaded machine.
    costs[keys[0]] = 1e7 + slow_first * 5e6;
    costs[keys[1]] = 1e7 - slow_first * 5e6;
    std::ofstream(cache) << costs.dump();
    CollageResult r = collage_partition(mod, o);
    ASSERT_NE(r.chosen_placement(), nullptr);
    EXPECT_DOUBLE_EQ(r.chosen_placement()->measured_us, 5e6);
    EXPECT_TRUE(r.chosen_placement()->cached);
    // The module returned is the chosen placement's: dnnl alone is what partition_for makes.
    IRModule dnnl_alone = transform::partition_for("dnnl", transform::FoldForInference()(mod), true);
    for (const CollagePlacement& p : r.placements) last_times[p.name] = p.measured_us;
    if (r.chosen == "dnnl") {
      EXPECT_TRUE(structural_equal(r.mod, dnnl_alone));
    }
    choices.insert(r.chosen);
  }
  EXPECT_EQ(choices, (std::set<std::string>{"collage", "dnnl"}));  // each time the faster one
  // The refit: the cached times (5 and 15 s) are far above the predictions, so a backend
  // partition is fitted to cost more; the fit is the least-squares one over the placements run.
  o.refit = true;
  CollageResult fit = collage_partition(mod, o);
  ASSERT_GE(fit.placements.size(), 2u);
  double num = 0, den = 0;
  for (size_t k = 0; k < 2; ++k) {
    const CollagePlacement& p = fit.placements[k];
    num += double(p.partitions) * (last_times.at(p.name) - p.predicted_us);
    den += double(p.partitions) * double(p.partitions);
  }
  EXPECT_NEAR(fit.refit_boundary_us, num / den, 1e-6);
  EXPECT_GT(fit.refit_boundary_us, 0.0);
  if (fit.placements.size() == 3) {  // the search with the fitted cost found a new placement: run too
    EXPECT_EQ(fit.placements[2].name, "collage-refit");
    EXPECT_TRUE(std::isfinite(fit.placements[2].measured_us) && fit.placements[2].measured_us > 0);
    // A dearer partition never makes the cheapest cover use more of them.
    EXPECT_LE(fit.placements[2].partitions, fit.placements[0].partitions);
  }
  // Warm, the decisions repeat from the cache (the refit's comparison keeps its own times).
  CollageResult again = collage_partition(mod, o);
  EXPECT_EQ(again.chosen, fit.chosen);
  EXPECT_TRUE(structural_equal(again.mod, fit.mod));
  EXPECT_EQ(again.measured, 0u);
  for (const CollagePlacement& p : again.placements) EXPECT_TRUE(p.cached) << p.name;
  // Without validation: the search's placement, not run.
  o.validate = false;
  CollageResult r = collage_partition(mod, o);
  EXPECT_EQ(r.chosen, "collage");
  EXPECT_EQ(r.placements.size(), 2u);
  EXPECT_EQ(r.placements[0].measured_us, 0.0);
  std::filesystem::remove(cache);
}

}  // namespace
