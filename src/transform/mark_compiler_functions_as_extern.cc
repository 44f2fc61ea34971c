// MarkCompilerFunctionsAsExtern: "Extern": 1 on compiled codegen functions (see byoc_helpers.h).
#include "partita/transform/byoc_helpers.h"

namespace partita::transform {

IRModule mark_compiler_functions_as_extern(IRModule mod, const std::string& compiler_filter) {
  IRModule out = mod;
  for (const auto& [gv, func] : mod.functions()) {
    auto* fn = func.as<FunctionNode>();
    if (!fn) continue;
    auto codegen = fn->attr_string("Codegen");
    if (!codegen || (!compiler_filter.empty() && *codegen != compiler_filter)) continue;
    DictAttrs attrs = fn->attrs;
    attrs["Extern"] = int64_t(1);
    if (attrs == fn->attrs) continue;
    auto marked = make<FunctionNode>(fn->params, fn->body, fn->ret_struct_info, fn->is_pure, std::move(attrs));
    marked->struct_info_ = fn->struct_info_;
    out.update(gv, marked);
  }
  return out;
}

Pass MarkCompilerFunctionsAsExtern(std::string compiler_filter) {
  return create_module_pass(
      [compiler_filter](IRModule mod, const PassContext&) {
        return mark_compiler_functions_as_extern(std::move(mod), compiler_filter);
      },
      0, "MarkCompilerFunctionsAsExtern");
}

}  // namespace partita::transform
