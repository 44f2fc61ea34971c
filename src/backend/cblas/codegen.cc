// The cblas codegen and patterns: matmul / dense (weight optionally transposed by permute_dims)
// with an optional bias add become sgemm calls (see README.md and module_format.h).
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "cblas.h"
#include "module_format.h"
#include "partita/codegen/json_graph_builder.h"
#include "partita/dpl/pattern.h"
#include "partita/op/ops.h"

namespace partita::backend::cblas {

using codegen::CodegenFunction;
using codegen::UnsupportedFunction;
using codegen::static_f32_shape;
using dpl::is_op;
using dpl::wildcard;
using json = nlohmann::json;

namespace {

// Activations the runtime applies to a product's rows right after sgemm (see README.md).
const std::map<std::string, std::string>& activations() {
  static const std::map<std::string, std::string> acts = {
      {"relax.nn.relu", "relu"},       {"relax.nn.gelu", "gelu"}, {"relax.nn.gelu_tanh", "gelu_tanh"},
      {"relax.nn.silu", "silu"},       {"relax.sigmoid", "sigmoid"}, {"relax.tanh", "tanh"}};
  return acts;
}

bool swaps_last_two(const std::vector<int64_t>& axes) {
  size_t n = axes.size();
  if (n < 2 || axes[n - 1] != int64_t(n - 2) || axes[n - 2] != int64_t(n - 1)) return false;
  for (size_t k = 0; k + 2 < n; ++k)
    if (axes[k] != int64_t(k)) return false;
  return true;
}

// Why `call` (a matmul, permute_dims or add of a match) cannot be lowered; empty when it can.
std::string unsupported_reason(const CallNode& call) {
  auto* op = call.op.as<OpNode>();
  if (!op) return "a call of something other than an operator";
  auto out = static_f32_shape(Expr(const_cast<CallNode*>(&call)));
  if (!out) return op->name + " does not produce a float32 tensor of static shape";
  std::vector<std::vector<int64_t>> shapes = {*out};
  for (const auto& a : call.args) {
    auto s = static_f32_shape(a);
    if (!s) return op->name + " has an argument that is not a float32 tensor of static shape";
    shapes.push_back(*s);
  }
  // Empty products are the host's (BLAS wants positive sizes; the host fills nothing or zeros).
  for (const auto& s : shapes)
    if (std::find(s.begin(), s.end(), 0) != s.end()) return op->name + " of a tensor with no elements";
  if (op->name == "relax.matmul") {
    auto a = static_f32_shape(call.args[0]), b = static_f32_shape(call.args[1]);
    // (..., M, K) by (K, N) runs as one product of all rows; (..., M, K) by (..., K, N) as one
    // product per batch entry, whose batch dims must then be the same (no broadcasting).
    if (a->size() < 2 || b->size() < 2) return "matmul of a 1-d operand";
    if (b->size() > 2 && (a->size() != b->size() || !std::equal(a->begin(), a->end() - 2, b->begin())))
      return "batched matmul with broadcast batch dimensions";
    return "";
  }
  if (op->name == "relax.permute_dims") {
    if (!swaps_last_two(op::permute_dims_axes(call, int64_t(out->size())))) return "permute_dims other than a transpose of the last two axes";
    return "";
  }
  if (op->name == "relax.add" || activations().count(op->name)) return "";
  return "operator " + op->name + " is not supported";
}

bool check_match(const transform::PatternCheckContext& ctx) {
  if (transform::has_leaking_intermediate_variables(ctx)) return false;
  for (const auto& [var, value] : ctx.matched_bindings)
    if (auto* call = value.as<CallNode>(); call && !unsupported_reason(*call).empty()) return false;
  // Each add is a bias of the matmul product (either operand, add commutes), broadcast along
  // the last axis only: (N), (1, N) or (1, 1, N).
  auto is_product = [&](const Expr& e) {
    auto* v = e.as<VarNode>();
    if (!v) return false;
    auto it = ctx.matched_bindings.find(Var(const_cast<VarNode*>(v)));
    auto* call = it == ctx.matched_bindings.end() ? nullptr : it->second.as<CallNode>();
    return call && call->op.as<OpNode>()->name == "relax.matmul";
  };
  std::vector<const CallNode*> calls;
  for (const auto& [var, value] : ctx.matched_bindings)
    if (auto* call = value.as<CallNode>()) calls.push_back(call);
  if (auto* root = ctx.matched_expr.as<CallNode>()) calls.push_back(root);
  for (const CallNode* add : calls) {
    if (add->op.as<OpNode>()->name != "relax.add") continue;
    // One operand is the product, the other something else (not the product again).
    bool first = is_product(add->args[0]), second = is_product(add->args[1]);
    if (first == second) return false;
    auto out = static_f32_shape(Expr(const_cast<CallNode*>(add)));
    auto product = static_f32_shape(add->args[first ? 0 : 1]);
    auto bias = static_f32_shape(add->args[first ? 1 : 0]);
    // The sum has the product's shape: the bias only broadcasts into it.
    if (!out || !product || !bias || *out != *product) return false;
    if (bias->empty() || bias->back() != out->back() || bias->size() > out->size()) return false;
    for (size_t k = 0; k + 1 < bias->size(); ++k)
      if ((*bias)[k] != 1) return false;
  }
  return true;
}

transform::FusionPattern entry(const std::string& name, dpl::Pattern p) {
  transform::FusionPattern f;
  f.name = "cblas." + name;
  f.pattern = std::move(p);
  f.check = check_match;
  return f;
}

class GraphBuilder : public codegen::JsonGraphBuilder {
 public:
  using JsonGraphBuilder::JsonGraphBuilder;

  json build() {
    const Function& fn = f_.func;
    std::unordered_map<const VarNode*, int> env;
    json inputs = bind_params(env);
    std::vector<int> outputs = lower_body(fn, env);
    // Fold each bias add into the matmul producing its single-use first operand.
    std::vector<int> uses(values_.size(), 0);
    for (const auto& n : nodes_)
      for (const char* k : {"a", "b", "bias"})
        if (n[k].get<int>() >= 0) uses[n[k].get<int>()]++;
    for (const auto& n : adds_) uses[n[0]]++, uses[n[1]]++;
    for (const auto& [x, out, act] : acts_) uses[x]++;
    for (int r : outputs) uses[r] += 2;  // outputs stay materialized
    for (const auto& add : adds_) {
      int x = add[0], bias = add[1], out = add[2];
      auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const json& n) { return n["out"] == x; });
      const auto& bs = values_[bias].get_ref<const json::array_t&>();
      int64_t n_cols = values_[x].back().get<int64_t>();
      bool bias_ok = !bs.empty() && bs.back().get<int64_t>() == n_cols;
      for (size_t k = 0; bias_ok && k + 1 < bs.size(); ++k) bias_ok = bs[k].get<int64_t>() == 1;
      if (it == nodes_.end() || uses[x] != 1 || (*it)["bias"].get<int>() >= 0 || !bias_ok)
        fail("an add that is not a bias of a matmul");
      (*it)["bias"] = bias;
      (*it)["out"] = out;
      (*it)["from"].push_back("relax.add");
    }
    // Then each activation into the matmul (+ bias) producing its single-use operand.
    for (const auto& [x, out, act] : acts_) {
      // (clang 14 cannot capture a structured binding: x is captured by an init-capture)
      auto it = std::find_if(nodes_.begin(), nodes_.end(), [&x = x](const json& n) { return n["out"] == x; });
      if (it == nodes_.end() || uses[x] != 1 || (*it)["activation"] != "none")
        fail("an activation that does not follow a matmul");
      (*it)["activation"] = act;
      (*it)["out"] = out;
      for (const auto& [relax_op, name] : activations())
        if (name == act) (*it)["from"].push_back(relax_op);
    }
    json g = graph(inputs, outputs);
    g["nodes"] = nodes_;
    return g;
  }

 private:
  // The values `fn` returns: one, or a merged partition's tuple of several.
  std::vector<int> lower_body(const Function& fn, std::unordered_map<const VarNode*, int>& env) {
    std::vector<int> out;
    for (const Expr& r : codegen::partition_results(codegen::walk_partition(fn, env, *this)))
      out.push_back(leaf(r, env));
    return out;
  }

  // walk_partition's hooks.
  template <class V, class L>
  friend const SeqExprNode& codegen::walk_partition(const Function&, codegen::ValueEnv<V>&, L&);
  int lower_op(const CallNode& call, const VarBindingNode&, std::unordered_map<const VarNode*, int>& env) {
    return lower_op(call, env);
  }
  int lower_composite(const Function& inner, std::unordered_map<const VarNode*, int>& params, const VarBindingNode&) {
    std::vector<int> out = lower_body(inner, params);
    if (out.size() != 1) fail("a composite returns a tuple");
    return out[0];
  }

  int lower_op(const CallNode& call, std::unordered_map<const VarNode*, int>& env) {
    std::string why = unsupported_reason(call);
    if (!why.empty()) fail(why);
    const std::string& name = call.op.as<OpNode>()->name;
    std::vector<int64_t> shape = *static_f32_shape(Expr(const_cast<CallNode*>(&call)));
    if (name == "relax.permute_dims") {
      int x = leaf(call.args[0], env);
      int out = new_value(shape);
      transposed_[out] = x;
      return out;
    }
    if (auto act = activations().find(name); act != activations().end()) {
      int x = leaf(call.args[0], env);
      int out = new_value(shape);
      acts_.push_back({x, out, act->second});
      return out;
    }
    if (name == "relax.add") {
      // The bias add of the composite's product, the latest one (a merged partition holds
      // earlier products too, which may be this add's other operand).
      int a = leaf(call.args[0], env), b = leaf(call.args[1], env);
      int product = nodes_.empty() ? -1 : nodes_.back()["out"].get<int>();
      if (b == product && a != product) std::swap(a, b);  // add commutes: bias + product
      if (a != product || b == product) fail("an add that is not a bias of a matmul");
      int out = new_value(shape);
      adds_.push_back({a, b, out});
      return out;
    }
    int a = leaf(call.args[0], env), b = leaf(call.args[1], env);
    bool tb = false;
    if (auto it = transposed_.find(b); it != transposed_.end()) {
      b = it->second;
      tb = true;
    }
    int out = new_value(shape);
    // "from": the Relax operators the product computes, so run-time errors can name them.
    json from = tb ? json::array({"relax.permute_dims", "relax.matmul"}) : json::array({"relax.matmul"});
    nodes_.push_back({{"a", a}, {"b", b}, {"bias", -1}, {"transpose_b", tb}, {"activation", "none"}, {"out", out},
                      {"from", from}});
    return out;
  }

  json nodes_ = json::array();
  std::unordered_map<int, int> transposed_;
  std::vector<std::array<int, 3>> adds_;
  std::vector<std::tuple<int, int, std::string>> acts_;  // operand, result, activation
};

}  // namespace

std::vector<transform::FusionPattern> cblas_patterns() {
  std::vector<transform::FusionPattern> out;
  // Later entries have priority: the longest chain (matmul + bias + activation) last.
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    dpl::Pattern w = is_op("relax.permute_dims")({wildcard()}) | wildcard();
    dpl::Pattern p = is_op("relax.matmul")({wildcard(), w});
    std::string name = "matmul";
    if (with_bias) p = is_op("relax.add")({p, wildcard()}), name += "_bias";
    out.push_back(entry(name, p));
    for (const auto& [op, act] : activations()) out.push_back(entry(name + "_" + act, is_op(op)({p})));
  }
  return out;
}

codegen::CodegenResult codegen(const std::vector<CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  std::vector<std::string> const_names;
  json g;
  g["version"] = 1;
  g["num_threads"] = target.get_int("num_threads");
  g["functions"] = json::array();
  for (const auto& f : functions) g["functions"].push_back(GraphBuilder(f, namer, const_names).build());
  return codegen::module_from_bytes(kModuleFormat.type_key,
                                    runtime::write_module_sections(kModuleFormat, {g.dump()}), namer);
}

}  // namespace partita::backend::cblas
