// OutlineCompilerFunctions and the GlobalSymbolCache (see byoc_helpers.h).
#include "partita/ir/analysis.h"
#include "partita/ir/substitute.h"
#include "partita/transform/byoc_helpers.h"
#include "pass_util.h"

namespace partita::transform {

using detail::rewrite_bindings;

std::string GlobalSymbolCache::symbol_for(const Function& func, const IRModule& mod) {
  Function key = without_attrs(func, {"global_symbol"});
  if (auto it = symbols_.find(key); it != symbols_.end()) return it->second;
  std::string name;
  if (auto sym = func->attr_string("global_symbol")) {
    // Its own name, unless another function already holds it.
    bool taken = mod.contains(*sym) && !(mod.lookup(*sym) == Expr(func));
    name = taken ? mod.unique_global_name(*sym) : *sym;
  } else {
    name = mod.unique_global_name(func->attr_string("Codegen").value_or("outlined") + "_0");
  }
  for (const auto& n : names_)
    if (n == name) name = mod.unique_global_name(name + "_");
  names_.push_back(name);
  return symbols_.emplace(key, name).first->second;
}

IRModule outline_compiler_functions(IRModule mod, std::shared_ptr<GlobalSymbolCache> cache,
                                    const std::string& compiler_filter) {
  if (!cache) cache = std::make_shared<GlobalSymbolCache>();
  auto with_symbol = [](const Function& fn, const std::string& name) {
    return detail::with_attrs(fn, [&](DictAttrs& attrs) { attrs["global_symbol"] = name; });
  };
  IRModule out = mod;
  // Global names redirected to their canonical definition.
  std::unordered_map<std::string, std::string> redirect;
  auto place = [&](const Function& fn) -> GlobalVar {
    std::string name = cache->symbol_for(fn, out);
    if (!out.contains(name)) {
      auto gv = make<GlobalVarNode>(name);
      Function def = with_symbol(fn, name);
      gv->struct_info_ = def->struct_info_ ? def->struct_info_ : func_struct_info_of(*def);
      out.add(gv, def);
    }
    return out.get_global_var(name);
  };
  // Global codegen functions first (in name order), so they keep their names.
  for (const auto& [gv, func] : mod.functions()) {
    auto fn = func.as_ref<FunctionNode>();
    if (!fn || !detail::has_codegen(*fn, compiler_filter)) continue;
    GlobalVar target = place(fn);
    if (target->name_hint != gv->name_hint) {
      redirect[gv->name_hint] = target->name_hint;
      out.remove(gv->name_hint);
    } else if (fn->attr_string("global_symbol") != gv->name_hint) {
      out.update(gv, with_symbol(fn, gv->name_hint));
    }
  }
  // Then codegen functions bound locally inside other functions, and redirected calls.
  for (const auto& [gv, func] : out.functions()) {
    auto* fn = func.as<FunctionNode>();
    if (!fn || fn->attrs.count("Codegen") || fn->attrs.count("Composite")) continue;
    // Local codegen functions become their globals; references to duplicate globals, their
    // canonical definition.
    PtrMap<Expr> remap;
    Function stripped = rewrite_bindings(Function(fn), [&](const Binding& b) -> Binding {
      auto* vb = b.as<VarBindingNode>();
      auto local = vb ? vb->value.as_ref<FunctionNode>() : Function();
      if (!local || !detail::has_codegen(*local, compiler_filter) || !free_vars(local).empty()) return b;
      remap.emplace(vb->var.get(), place(local));
      return Binding();
    });
    for (const auto& g : all_global_vars(func))
      if (auto it = redirect.find(g->name_hint); it != redirect.end())
        remap.emplace(g.get(), out.get_global_var(it->second));
    if (remap.empty()) continue;
    out.update(gv, Substitutor(std::move(remap), out)(stripped));
  }
  return out;
}

Pass OutlineCompilerFunctions(std::shared_ptr<GlobalSymbolCache> cache, std::string compiler_filter) {
  return module_pass(outline_compiler_functions, 0, "OutlineCompilerFunctions", std::move(cache),
                     std::move(compiler_filter));
}

}  // namespace partita::transform
