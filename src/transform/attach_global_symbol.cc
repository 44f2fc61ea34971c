// AttachGlobalSymbol: see the header. TVM renames a function whose symbol gets the module's
// "system_lib_prefix"; that prefix applies to TIR functions only, which Partita has none of, so
// every symbol is the function's own name and no GlobalVar changes.
#include "partita/transform/attach_global_symbol.h"

namespace partita::transform {

Pass AttachGlobalSymbol() {
  return create_module_pass(
      [](IRModule mod, const PassContext&) -> IRModule {
        for (const auto& [gv, f] : mod.functions()) {
          const auto* fn = f.as<FunctionNode>();
          if (!fn || fn->attr_string("global_symbol") == gv->name_hint) continue;
          Ref<FunctionNode> copy(copy_node(Function(fn)));
          const_cast<FunctionNode*>(copy.get())->attrs["global_symbol"] = gv->name_hint;
          mod.update(gv, copy);
        }
        return mod;
      },
      0, "AttachGlobalSymbol");
}

}  // namespace partita::transform
