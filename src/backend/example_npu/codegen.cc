// The example NPU's codegen: every offloaded function becomes a JSON graph (module_format.h) of
// one "kernel" node per composite call, named by its pattern as in TVM's
// ExampleNPUJSONSerializer, and holding the composite's operator calls with their attributes
// so the runtime can compute them.
//
// It walks the functions itself rather than with codegen::walk_partition: a partition holding
// example_npu.batch_norm has a tuple result and the TupleGetItem MergeCompositeFunctions puts
// beside it, which the shared walker does not take.
#include <nlohmann/json.hpp>

#include "example_npu.h"
#include "module_format.h"
#include "partita/codegen/json_graph_builder.h"

namespace partita::backend::example_npu {
namespace {

using json = nlohmann::json;
/// What a variable holds: the ids of its tensors (one, or a tuple's fields in order).
using Env = codegen::ValueEnv<std::vector<int>>;

json attr_json(const std::string& key, const AttrValue& v, const codegen::JsonGraphBuilder& b) {
  return std::visit(
      [&](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          return {"none", nullptr};
        else if constexpr (std::is_same_v<T, bool>)
          return {"bool", x};
        else if constexpr (std::is_same_v<T, int64_t>)
          return {"int", x};
        else if constexpr (std::is_same_v<T, double>)
          return {"float", x};
        else if constexpr (std::is_same_v<T, std::string>)
          return {"str", x};
        else if constexpr (std::is_same_v<T, DataType>)
          return {"dtype", x.is_void() ? "" : x.str()};
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return {"ints", x};
        else
          b.fail("attribute " + key + " is a virtual device");
      },
      v);
}

class GraphBuilder : public codegen::JsonGraphBuilder {
 public:
  using JsonGraphBuilder::JsonGraphBuilder;

  json build() {
    codegen::ValueEnv<int> params;
    json inputs = bind_params(params);
    Env env;
    for (const auto& [var, id] : params) env[var] = {id};
    const SeqExprNode& seq = walk(f_.func, env, nullptr);
    return {{"symbol", f_.symbol},     {"values", values_}, {"inputs", inputs},
            {"constants", constants_}, {"nodes", nodes_},   {"outputs", values_of(seq.body, env)}};
  }

 private:
  /// The tensors `e` stands for: a variable's, a float32 constant, or a tuple's fields.
  std::vector<int> values_of(const Expr& e, Env& env) {
    if (const auto* v = e.as<VarNode>()) {
      auto it = env.find(v);
      if (it == env.end()) fail("variable '" + v->name_hint + "' is not computed here");
      return it->second;
    }
    if (e.as<ConstantNode>()) {
      codegen::ValueEnv<int> none;
      return {leaf(e, none)};
    }
    if (const auto* t = e.as<TupleNode>()) {
      std::vector<int> ids;
      for (const Expr& field : t->fields) {
        std::vector<int> f = values_of(field, env);
        if (f.size() != 1) fail("a tuple nested in a tuple");
        ids.push_back(f[0]);
      }
      return ids;
    }
    fail(std::string("an operand is a ") + node_kind_name(e->kind()));
  }

  /// Walks `fn`'s bindings; `node` is the composite being filled (null for the offloaded
  /// function itself, whose bindings call composites).
  const SeqExprNode& walk(const Function& fn, Env& env, json* node) {
    const auto* seq = fn->body.as<SeqExprNode>();
    if (!seq) fail("a function body is not normalized");
    std::unordered_map<const VarNode*, Function> local;
    for (const auto& block : seq->blocks)
      for (const auto& b : block->bindings) {
        const auto* vb = b.as<VarBindingNode>();
        if (!vb) fail("match_cast is not supported");
        const Expr& value = vb->value;
        if (auto f = value.as_ref<FunctionNode>()) {
          local[vb->var.get()] = f;
        } else if (const auto* get = value.as<TupleGetItemNode>()) {
          std::vector<int> ids = values_of(get->tuple, env);
          if (get->index < 0 || size_t(get->index) >= ids.size())
            fail("a tuple index is out of range");
          env[vb->var.get()] = {ids[size_t(get->index)]};
        } else if (const auto* call = value.as<CallNode>()) {
          env[vb->var.get()] = call->op.as<OpNode>() ? lower_op(*call, env, node)
                                                     : lower_composite(*call, env, local, node);
        } else {
          env[vb->var.get()] = values_of(value, env);
        }
      }
    return *seq;
  }

  std::vector<int> lower_op(const CallNode& call, Env& env, json* node) {
    const std::string name = call.op.as<OpNode>()->name;
    if (!node) fail("operator " + name + " is called outside a composite function");
    if (std::string why = unsupported_call(call); !why.empty()) fail(why);
    json inputs = json::array(), attrs = json::object();
    for (const Expr& a : call.args) inputs.push_back(values_of(a, env).at(0));
    if (call.attrs)
      for (const auto& [key, value] : call.attrs->values) attrs[key] = attr_json(key, value, *this);
    std::vector<int> outputs;
    if (const auto* tuple = call.struct_info_.as<TupleStructInfoNode>())
      for (const StructInfo& field : tuple->fields)
        outputs.push_back(new_value(*static_shape(field)));
    else
      outputs.push_back(new_value(*static_shape(call.struct_info_)));
    (*node)["ops"].push_back(
        {{"op", name}, {"attrs", attrs}, {"inputs", inputs}, {"outputs", outputs}});
    return outputs;
  }

  std::vector<int> lower_composite(const CallNode& call, Env& env,
                                   const std::unordered_map<const VarNode*, Function>& local,
                                   json* node) {
    const auto* callee = call.op.as<VarNode>();
    auto it = callee ? local.find(callee) : local.end();
    if (it == local.end() || node)
      fail("it calls something other than an operator or a local composite function");
    const Function& composite = it->second;
    std::string name = composite->attr_string("Composite").value_or("");
    if (name.empty()) fail("only composite functions are supported");  // as TVM's serializer
    if (composite->params.size() != call.args.size())
      fail("a composite call has the wrong number of arguments");
    json kernel = {
        {"name", name}, {"op_type", "kernel"}, {"inputs", json::array()}, {"ops", json::array()}};
    Env params;
    for (size_t i = 0; i < call.args.size(); ++i) {
      params[composite->params[i].get()] = values_of(call.args[i], env);
      for (int id : params[composite->params[i].get()]) kernel["inputs"].push_back(id);
    }
    const SeqExprNode& seq = walk(composite, params, &kernel);
    std::vector<int> outputs = values_of(seq.body, params);
    kernel["outputs"] = outputs;
    nodes_.push_back(std::move(kernel));
    return outputs;
  }

  json nodes_ = json::array();
};

}  // namespace

codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions,
                               const codegen::Target&,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  std::vector<std::string> const_names;
  json graph = {{"functions", json::array()}};
  for (const auto& f : functions)
    graph["functions"].push_back(GraphBuilder(f, namer, const_names).build());
  codegen::CodegenResult result;
  // The runtime plug-in makes the module from its bytes, as when an exported artifact is loaded.
  std::string bytes = runtime::write_module_sections(kModuleFormat, {graph.dump()});
  result.modules.push_back(runtime::load_module_from_binary(kModuleFormat.type_key, bytes));
  result.constants = namer.added();
  return result;
}

}  // namespace partita::backend::example_npu
