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
  return module_pass(mark_compiler_functions_as_extern, 0, "MarkCompilerFunctionsAsExtern",
                     std::move(compiler_filter));
}

}  // namespace partita::transform
