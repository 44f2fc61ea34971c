// MarkCompilerFunctionsAsExtern: "Extern": 1 on compiled codegen functions (see byoc_helpers.h).
#include "partita/transform/byoc_helpers.h"
#include "pass_util.h"

namespace partita::transform {

IRModule mark_compiler_functions_as_extern(IRModule mod, const std::string& compiler_filter) {
  IRModule out = mod;
  for (const auto& [gv, func] : mod.functions()) {
    auto fn = func.as_ref<FunctionNode>();
    if (!fn || !detail::has_codegen(*fn, compiler_filter)) continue;
    Function marked = detail::with_attrs(fn, [](DictAttrs& a) { a["Extern"] = int64_t(1); });
    if (marked.get() != fn.get()) out.update(gv, marked);
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
