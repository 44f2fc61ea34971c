// RunCodegen: module-at-a-time external codegen (see codegen.h; TVM's relax RunCodegen).
#include <iostream>
#include <set>

#include "partita/codegen/codegen.h"
#include "partita/ir/analysis.h"
#include "partita/ir/functor.h"
#include "partita/transform/byoc_helpers.h"

namespace partita::codegen {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out.empty() ? "(none)" : out;
}

// Calls of compiled functions become pure calls of their external symbol.
class ExternCallRewriter : public ExprMutator {
 public:
  ExternCallRewriter(IRModule mod, const std::map<std::string, std::string>& symbol_of)
      : ExprMutator(std::move(mod)), symbol_of_(symbol_of) {}

  Expr visit_(const CallNode* op) override {
    Expr visited = ExprMutator::visit_(op);
    auto* call = visited.as<CallNode>();
    auto* gv = call ? call->op.as<GlobalVarNode>() : nullptr;
    if (!gv) return visited;
    auto it = symbol_of_.find(gv->name_hint);
    if (it == symbol_of_.end()) return visited;
    StructInfo ret = op->struct_info_ ? op->struct_info_ : struct_info_of(visited);
    auto callee = make<ExternFuncNode>(it->second);
    callee->struct_info_ = make<FuncStructInfoNode>(std::nullopt, ret, true);
    return builder_.normalize(make<CallNode>(callee, call->args, Attrs(), std::vector<StructInfo>{ret}));
  }

 private:
  const std::map<std::string, std::string>& symbol_of_;
};

std::set<std::string> reachable_from(const IRModule& mod, const std::vector<std::string>& entries) {
  std::set<std::string> seen;
  std::vector<std::string> work;
  for (const auto& e : entries) {
    if (!mod.contains(e)) throw_error("KeyError", "RunCodegen: entry function '" + e + "' is not in the module");
    work.push_back(e);
  }
  while (!work.empty()) {
    std::string name = work.back();
    work.pop_back();
    if (!seen.insert(name).second || !mod.contains(name)) continue;
    for (const auto& g : all_global_vars(mod.lookup(name))) work.push_back(g->name_hint);
  }
  return seen;
}

}  // namespace

IRModule run_codegen(IRModule mod, const RunCodegenOptions& options) {
  bool fallback = false;
  if (options.fallback) {
    fallback = *options.fallback;
  } else if (const AttrValue* v = transform::PassContext::current().get_config(kRunCodegenFallbackConfig)) {
    if (auto* b = std::get_if<bool>(v)) fallback = *b;
    else if (auto* i = std::get_if<int64_t>(v)) fallback = *i != 0;
    else throw_error("TypeError", std::string("config '") + kRunCodegenFallbackConfig + "' must be a bool");
  }
  auto warn = options.warn ? options.warn : [](const std::string& m) { std::cerr << "Warning: " << m << "\n"; };

  std::optional<std::set<std::string>> reachable;
  if (!options.entry_functions.empty()) reachable = reachable_from(mod, options.entry_functions);

  // Codegen name -> its functions (global name, function), in name order.
  std::map<std::string, std::vector<std::pair<std::string, Function>>> groups;
  for (const auto& [gv, func] : mod.functions()) {
    auto fn = func.as_ref<FunctionNode>();
    if (!fn) continue;
    auto codegen = fn->attr_string("Codegen");
    if (!codegen || (reachable && !reachable->count(gv->name_hint))) continue;
    groups[*codegen].emplace_back(gv->name_hint, fn);
  }

  std::vector<runtime::ModulePtr> new_mods;
  std::map<std::string, Tensor> constants = mod->const_name_to_constant;
  std::map<std::string, Tensor> new_constants;
  std::map<std::string, std::string> symbol_of;  // compiled global name -> symbol
  std::vector<std::string> rejected;
  for (const auto& [codegen, funcs] : groups) {
    const CodegenFn* fn = find_codegen(codegen);
    if (!fn) {
      std::vector<std::string> names;
      for (const auto& f : funcs) names.push_back(f.first);
      throw_error("KeyError", "RunCodegen: no codegen registered for '" + codegen + "' (used by " + join(names) +
                                  "); registered codegens: " + join(list_codegens()));
    }
    std::optional<Target> target;
    for (const auto& t : options.targets)
      if (t.kind() == codegen) target = t;
    if (!target) {
      auto it = options.target_options.find(codegen);
      target = Target(codegen, it == options.target_options.end() ? TargetOptionMap{} : it->second);
    }
    std::set<std::string> refused;
    while (true) {
      std::vector<CodegenFunction> batch;
      for (const auto& [name, f] : funcs)
        if (!refused.count(name)) batch.push_back({f->attr_string("global_symbol").value_or(name), f});
      if (batch.empty()) break;
      CodegenResult result;
      try {
        result = (*fn)(batch, *target, constants);
      } catch (const UnsupportedFunction& e) {
        std::string global;
        for (const auto& [name, f] : funcs)
          if (!refused.count(name) && (f->attr_string("global_symbol").value_or(name) == e.function() || name == e.function()))
            global = name;
        if (global.empty()) throw;  // names a function it was not given: a bug in the codegen
        if (!fallback)
          throw_error("UnsupportedFunction", "RunCodegen: codegen '" + codegen + "' cannot compile function '" +
                                                 e.function() + "': " + e.reason() + " (set config '" +
                                                 kRunCodegenFallbackConfig + "' to run it on the host)");
        warn("RunCodegen: codegen '" + codegen + "' cannot compile function '" + e.function() + "' (" + e.reason() +
             "); it runs " + options.fallback_to + " instead");
        refused.insert(global);
        rejected.push_back(global);
        continue;
      }
      for (const auto& f : batch)
        for (const auto& [name, fn2] : funcs)
          if (fn2 == f.func) symbol_of[name] = f.symbol;
      for (auto& m : result.modules) new_mods.push_back(std::move(m));
      for (const auto& [name, t] : result.constants) {
        auto it = constants.find(name);
        if (it != constants.end() && !it->second.same_buffer(t) && !it->second.content_equal(t))
          throw_error("ValueError", "RunCodegen: codegen '" + codegen + "' binds constant '" + name +
                                        "', which already names a different tensor");
        constants[name] = t;
        new_constants[name] = t;
      }
      break;
    }
  }

  IRModule out = mod;
  if (!rejected.empty()) out = transform::inline_compiler_functions(out, {{}, rejected});
  if (!symbol_of.empty()) {
    for (const auto& [gv, func] : out.functions()) {
      if (symbol_of.count(gv->name_hint) || !func.as<FunctionNode>()) continue;
      ExternCallRewriter rewriter(out, symbol_of);
      Expr updated = rewriter.visit_expr(func);
      if (!(updated == func)) out.update(gv, updated);
    }
    for (const auto& [name, symbol] : symbol_of) out.remove(name);
  }
  if (!new_mods.empty() || !new_constants.empty()) {
    auto* node = out.cow();
    if (!new_mods.empty()) {
      std::vector<runtime::ModulePtr> all = external_mods_of(out);
      all.insert(all.end(), new_mods.begin(), new_mods.end());
      node->attrs["external_mods"] = make<ExternalModulesNode>(std::move(all));
    }
    for (const auto& [name, t] : new_constants) node->const_name_to_constant[name] = t;
  }
  return out;
}

namespace {
// The pass reads the fallback config of the context it runs in.
IRModule run_in(const transform::PassContext& ctx, IRModule mod, RunCodegenOptions options) {
  if (!options.fallback)
    if (const AttrValue* v = ctx.get_config(kRunCodegenFallbackConfig)) {
      if (auto* b = std::get_if<bool>(v)) options.fallback = *b;
      else if (auto* i = std::get_if<int64_t>(v)) options.fallback = *i != 0;
    }
  return run_codegen(std::move(mod), options);
}
}  // namespace

transform::Pass RunCodegen(std::map<std::string, TargetOptionMap> target_options,
                           std::vector<std::string> entry_functions) {
  RunCodegenOptions options;
  options.target_options = std::move(target_options);
  options.entry_functions = std::move(entry_functions);
  return transform::create_module_pass(
      [options](IRModule mod, const transform::PassContext& ctx) { return run_in(ctx, std::move(mod), options); },
      0, "RunCodegen");
}

transform::Pass RunCodegenWithTargets(std::vector<Target> targets, std::optional<bool> fallback,
                                      std::vector<std::string> entry_functions) {
  RunCodegenOptions options;
  options.targets = std::move(targets);
  options.fallback = fallback;
  options.entry_functions = std::move(entry_functions);
  return transform::create_module_pass(
      [options](IRModule mod, const transform::PassContext& ctx) { return run_in(ctx, std::move(mod), options); },
      0, "RunCodegen");
}

}  // namespace partita::codegen
