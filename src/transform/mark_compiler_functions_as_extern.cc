// MarkCompilerFunctionsAsExtern: "Extern": 1 on compiled codegen functions (see byoc_helpers.h).
#include "partita/transform/byoc_helpers.h"
#include "pass_util.h"

namespace partita::transform {

IRModule mark_compiler_functions_as_extern(IRModule mod, const std::string& compiler_filter) {
  return detail::map_functions(std::move(mod), [&](const Function& fn) {
    if (!detail::has_codegen(*fn, compiler_filter)) return fn;
    return detail::with_attrs(fn, [](DictAttrs& attrs) { attrs["Extern"] = int64_t(1); });
  });
}

Pass MarkCompilerFunctionsAsExtern(std::string compiler_filter) {
  return create_module_pass(
      [compiler_filter](IRModule mod, const PassContext&) {
        return mark_compiler_functions_as_extern(std::move(mod), compiler_filter);
      },
      0, "MarkCompilerFunctionsAsExtern");
}

}  // namespace partita::transform
