// The cudnn codegen: each offloaded function (a composite, or a partition of composites merged
// by MergeCompositeFunctions) becomes a program of nodes (module_format.h). Convolutions run in
// NHWC: an activation is converted where it enters the partition or leaves it (or meets an
// attention, which reads the Relax layout), never between two convolutions; weights are
// converted by a node of a constant, which the runtime runs once per device at load.
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "cudnn.h"
#include "module_format.h"
#include "partita/codegen/partition_walker.h"
#include "partita/runtime/module_sections.h"

namespace partita::backend::cudnn {

using codegen::CodegenFunction;
using codegen::UnsupportedFunction;
using json = nlohmann::json;

namespace {

std::vector<int64_t> ints_attr(const CallNode& call, const char* name, std::vector<int64_t> dflt) {
  if (const auto* v = call_attr<std::vector<int64_t>>(call, name)) return *v;
  if (const auto* i = call_attr<int64_t>(call, name)) return {*i};
  return dflt;
}

std::vector<int64_t> pair2(std::vector<int64_t> v) { return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v; }

std::vector<int64_t> padding4(const std::vector<int64_t>& v) {
  if (v.size() == 1) return {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1], v[0], v[1]};
  return v;
}

class ProgramBuilder {
 public:
  ProgramBuilder(const CodegenFunction& f, codegen::ConstantNamer& namer, std::vector<std::string>& const_names)
      : f_(f), namer_(namer), const_names_(const_names) {}

  json build() {
    const Function& fn = f_.func;
    codegen::ValueEnv<int> env;
    json inputs = json::array();
    for (const Var& p : fn->params) {
      const auto* t = p->struct_info_.as<TensorStructInfoNode>();
      if (!t) fail("a parameter is not a tensor");
      int id = new_value(p->struct_info_, false);
      env[p.get()] = id;
      inputs.push_back(id);
    }
    const SeqExprNode& seq = codegen::walk_partition(fn, env, *this);
    json outputs = json::array();
    for (const Expr& r : codegen::partition_results(seq)) {
      int id = logical(leaf(r, env));
      for (const auto& in : inputs)
        if (in.get<int>() == id) fail("a partition output is one of its inputs");
      outputs.push_back(id);
    }
    json g;
    g["symbol"] = f_.symbol;
    g["values"] = values_;
    g["inputs"] = inputs;
    g["outputs"] = outputs;
    g["constants"] = constants_;
    g["nodes"] = nodes_;
    return g;
  }

  // ---- walk_partition's hooks ----
  int leaf(const Expr& e, codegen::ValueEnv<int>& env) {
    if (const auto* v = e.as<VarNode>()) {
      auto it = env.find(v);
      if (it == env.end()) fail("a variable is used before it is defined");
      return it->second;
    }
    if (const auto* c = e.as<ConstantNode>()) {
      std::string name = namer_.name_for(c->data, f_.symbol);
      if (auto it = constant_ids_.find(name); it != constant_ids_.end()) return it->second;
      int id = new_value(e->struct_info_, false);
      constants_.push_back({{"value", id}, {"name", name}});
      constant_ids_[name] = id;
      if (std::find(const_names_.begin(), const_names_.end(), name) == const_names_.end()) const_names_.push_back(name);
      return id;
    }
    fail("an operand is neither a variable nor a constant");
  }

  int lower_op(const CallNode& call, const VarBindingNode&, codegen::ValueEnv<int>&) {
    const auto* op = call.op.as<OpNode>();
    fail("the cudnn codegen runs composite functions only, not a bare " + (op ? op->name : std::string("call")));
  }

  int lower_composite(const Function& composite, codegen::ValueEnv<int>& params, const VarBindingNode&) {
    auto it = composite->attrs.find("Composite");
    const std::string* name = it == composite->attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
    if (!name) fail("a local function without a Composite attribute");
    const auto* seq = composite->body.as<SeqExprNode>();
    if (!seq) fail("a composite body is not normalized");
    std::unordered_map<const Object*, Expr> bound;
    for (const auto& block : seq->blocks)
      for (const auto& b : block->bindings)
        if (const auto* vb = b.as<VarBindingNode>()) bound[vb->var.get()] = vb->value;
    auto value_of = [&](const Expr& e) -> Expr {
      auto found = bound.find(e.get());
      return found == bound.end() ? Expr() : found->second;
    };
    Expr root_value = value_of(seq->body);
    const auto* root = root_value ? root_value.as<CallNode>() : nullptr;
    if (!root) fail(*name + " does not end in a call");
    if (name->rfind("cudnn.attention", 0) == 0) return lower_attention(*root, params);
    if (name->rfind("cudnn.conv2d", 0) == 0) {
      auto chain = read_conv_chain(*root, value_of);
      if (!chain) fail(*name + " is not a conv2d chain");
      if (auto why = conv_unsupported(*chain)) fail(*why);
      return lower_conv(*chain, params);
    }
    fail("unknown composite " + *name);
  }

  [[noreturn]] void fail(const std::string& why) const { throw UnsupportedFunction(f_.symbol, why); }

 private:
  int new_value(const StructInfo& sinfo, bool nhwc) {
    const auto* t = sinfo.as<TensorStructInfoNode>();
    if (!t || !t->shape) fail("a value without a static tensor shape");
    std::vector<int64_t> shape;
    for (const PrimExpr& d : *t->shape) {
      auto v = as_const_int(d);
      if (!v) fail("a value of symbolic shape");
      shape.push_back(*v);
    }
    values_.push_back({{"shape", shape}, {"dtype", t->dtype.str()}, {"layout", nhwc ? "nhwc" : "logical"}});
    return int(values_.size() - 1);
  }

  bool is_nhwc(int id) const { return values_[size_t(id)]["layout"] == "nhwc"; }

  /// `id` converted to the other layout (memoized, so a value is converted once).
  int convert(int id, bool to_nhwc) {
    if (is_nhwc(id) == to_nhwc) return id;
    auto& cache = to_nhwc ? nhwc_of_ : logical_of_;
    if (auto it = cache.find(id); it != cache.end()) return it->second;
    if (values_[size_t(id)]["shape"].size() != 4) fail("a layout conversion of a tensor that is not 4-d");
    json v = values_[size_t(id)];
    v["layout"] = to_nhwc ? "nhwc" : "logical";
    values_.push_back(v);
    int out = int(values_.size() - 1);
    nodes_.push_back({{"op", to_nhwc ? "to_nhwc" : "to_nchw"}, {"in", {id}}, {"out", out}});
    cache[id] = out;
    (to_nhwc ? logical_of_ : nhwc_of_)[out] = id;
    return out;
  }
  int nhwc(int id) { return convert(id, true); }
  int logical(int id) { return convert(id, false); }

  int lower_conv(const ConvChain& c, codegen::ValueEnv<int>& params) {
    std::vector<int> in{nhwc(leaf(c.data, params)), nhwc(leaf(c.weight, params))};
    if (c.bias) in.push_back(leaf(c.bias, params));
    if (c.residual) in.push_back(nhwc(leaf(c.residual, params)));
    int out = new_value(c.root->struct_info_, true);
    const CallNode& conv = *c.conv;
    json n = {{"op", "conv2d"},
              {"in", in},
              {"out", out},
              {"has_bias", bool(c.bias)},
              {"has_residual", bool(c.residual)},
              {"strides", pair2(ints_attr(conv, "strides", {1, 1}))},
              {"padding", padding4(ints_attr(conv, "padding", {0, 0, 0, 0}))},
              {"dilation", pair2(ints_attr(conv, "dilation", {1, 1}))},
              {"groups", call_attr<int64_t>(conv, "groups") ? *call_attr<int64_t>(conv, "groups") : int64_t(1)},
              {"activation", c.activation},
              {"clip", {c.clip_min, c.clip_max}}};
    nodes_.push_back(std::move(n));
    return out;
  }

  int lower_attention(const CallNode& call, codegen::ValueEnv<int>& params) {
    if (auto why = attention_unsupported(call)) fail(*why);
    std::vector<int> in;
    for (const Expr& a : call.args) in.push_back(logical(leaf(a, params)));
    int out = new_value(call.struct_info_, false);
    const double* scale = call_attr<double>(call, "scale");
    const double head_dim = double(values_[size_t(in[0])]["shape"][3].get<int64_t>());
    const std::string* causal = call_attr<std::string>(call, "causal_mask");
    nodes_.push_back({{"op", "attention"},
                      {"in", in},
                      {"out", out},
                      {"scale", scale ? *scale : 1.0 / std::sqrt(head_dim)},
                      {"causal", causal ? *causal : ""}});
    return out;
  }

  const CodegenFunction& f_;
  codegen::ConstantNamer& namer_;
  std::vector<std::string>& const_names_;
  json values_ = json::array(), nodes_ = json::array(), constants_ = json::array();
  std::map<std::string, int> constant_ids_;
  std::map<int, int> nhwc_of_, logical_of_;
};

}  // namespace

std::string serialize_program(const std::vector<CodegenFunction>& functions, codegen::ConstantNamer& namer,
                              std::vector<std::string>& const_names, bool allow_tf32, bool autotune,
                              int64_t autotune_top_k) {
  json p;
  p["version"] = 1;
  p["allow_tf32"] = allow_tf32;
  p["autotune"] = autotune;
  p["autotune_top_k"] = autotune_top_k;
  p["functions"] = json::array();
  for (const auto& f : functions) p["functions"].push_back(ProgramBuilder(f, namer, const_names).build());
  return p.dump();
}

codegen::CodegenResult codegen(const std::vector<CodegenFunction>& functions, const codegen::Target& target,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  std::vector<std::string> const_names;
  const int64_t tf32 = target.get_int("allow_tf32");
  if (tf32 != 0 && tf32 != 1) throw_error("ValueError", "cudnn: allow_tf32 must be 0 or 1, got " + std::to_string(tf32));
  const int64_t autotune = target.get_int("autotune");
  if (autotune != 0 && autotune != 1) throw_error("ValueError", "cudnn: autotune must be 0 or 1, got " + std::to_string(autotune));
  const int64_t top_k = target.get_int("autotune_top_k");
  if (top_k < 0) throw_error("ValueError", "cudnn: autotune_top_k must be >= 0, got " + std::to_string(top_k));
  std::string program = serialize_program(functions, namer, const_names, tf32 == 1, autotune == 1, top_k);
  return codegen::module_from_bytes(kModuleFormat.type_key,
                                    runtime::write_module_sections(kModuleFormat, {program}), namer);
}

}  // namespace partita::backend::cudnn
