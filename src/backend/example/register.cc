// The example backend's compiler half: its pattern, its codegen and its record. The pattern's
// check accepts exactly what the codegen and the runtime plug-in can run (float32 adds of two
// tensors of one static shape), so the backend never takes what it cannot run.
#include <nlohmann/json.hpp>

#include "module_format.h"
#include "partita/backend/registry.h"
#include "partita/codegen/json_graph_builder.h"
#include "partita/dpl/pattern.h"

namespace partita::backend::example {
namespace {

using codegen::static_f32_shape;
using json = nlohmann::json;

bool same_static_f32_shapes(const CallNode& call) {
  auto out = static_f32_shape(Expr(const_cast<CallNode*>(&call)));
  if (!out || call.args.size() != 2) return false;
  for (const Expr& arg : call.args)
    if (static_f32_shape(arg) != out) return false;
  return true;
}

std::vector<transform::FusionPattern> patterns() {
  transform::FusionPattern add;
  add.name = "example.add";
  add.pattern = dpl::is_op("relax.add")({dpl::wildcard(), dpl::wildcard()});
  add.check = [](const transform::PatternCheckContext& ctx) {
    auto* call = ctx.matched_expr.as<CallNode>();
    return call && same_static_f32_shapes(*call);
  };
  return {add};
}

// One offloaded function (a composite, or a merged partition of several) as a list of adds.
class GraphBuilder : public codegen::JsonGraphBuilder {
 public:
  using JsonGraphBuilder::JsonGraphBuilder;

  json build() {
    codegen::ValueEnv<int> env;
    json inputs = bind_params(env);
    const SeqExprNode& seq = codegen::walk_partition<int>(f_.func, env, *this);
    int output = leaf(seq.body, env);
    bool computed = false;
    for (const auto& a : adds_) computed |= a[2].get<int>() == output;
    if (!computed) fail("its result is not computed by an add");
    return {{"symbol", f_.symbol}, {"values", values_}, {"inputs", inputs}, {"constants", constants_},
            {"adds", adds_},       {"output", output}};
  }

  int lower_op(const CallNode& call, const VarBindingNode&, codegen::ValueEnv<int>& env) {
    auto* op = call.op.as<OpNode>();
    if (op->name != "relax.add") fail("operator " + op->name + " is not supported");
    if (!same_static_f32_shapes(call)) fail("an add of other than two float32 tensors of one static shape");
    int a = leaf(call.args[0], env), b = leaf(call.args[1], env);
    int out = new_value(*static_f32_shape(call.args[0]));
    adds_.push_back({a, b, out});
    return out;
  }

  int lower_composite(const Function& composite, codegen::ValueEnv<int>& params, const VarBindingNode&) {
    const SeqExprNode& seq = codegen::walk_partition<int>(composite, params, *this);
    return leaf(seq.body, params);
  }

 private:
  json adds_ = json::array();
};

codegen::CodegenResult codegen(const std::vector<codegen::CodegenFunction>& functions, const codegen::Target&,
                               const std::map<std::string, Tensor>& const_name_to_constant) {
  codegen::ConstantNamer namer(const_name_to_constant);
  std::vector<std::string> const_names;
  json graph = {{"functions", json::array()}};
  for (const auto& f : functions) graph["functions"].push_back(GraphBuilder(f, namer, const_names).build());
  // The runtime plug-in makes the module from its bytes, as when an exported artifact is loaded.
  std::string bytes = runtime::write_module_sections(kModuleFormat, {graph.dump()});
  return codegen::module_from_bytes(kModuleFormat.type_key, bytes, namer);
}

}  // namespace

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "example";
  b.description = "the example backend of docs/adding-a-backend.md: relax.add as a plain C++ loop";
  b.colour = "#e0c080";
  b.patterns = patterns;
  b.codegen = codegen;
  b.runtime_plugin = "example";
  return b;
});

}  // namespace partita::backend::example
