// Helper passes for external codegen (the Relay BYOC helpers of seed 000, on Relax IR).
//
// InlineCompilerFunctions undoes partitioning *and* compositing: calls of the chosen "Codegen"
// functions (and of global "Composite" functions) are replaced by their bodies, recursively
// through nested composites, so the result is structurally equal to the unpartitioned module.
// OutlineCompilerFunctions makes every "Codegen" function a unique global (structurally equal
// ones share one definition); MarkCompilerFunctionsAsExtern marks them "Extern": 1 once compiled.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "partita/ir/module.h"
#include "partita/ir/structural_equal.h"
#include "partita/transform/pass.h"

namespace partita::transform {

/// What InlineCompilerFunctions inlines: calls of global functions whose "Codegen" names one of
/// `backends` (or, for a global composite, whose "Composite" starts with "<backend>."), and
/// calls of the global functions named in `functions`. Both empty: every codegen function and
/// every global composite.
struct InlineSelection {
  std::vector<std::string> backends;
  std::vector<std::string> functions;
};

/// Inlines the selected calls; inlined global functions that are no longer called are removed.
IRModule inline_compiler_functions(IRModule mod, const InlineSelection& selection = {});
Pass InlineCompilerFunctions(InlineSelection selection = {});

/// Maps a codegen function to the global that holds it (TVM's GlobalSymbolCache), keyed by
/// structural hash/equality of the function without "global_symbol": a new function is named
/// after its own "global_symbol" when it has one, else "<codegen>_<n>" (made unique in the
/// module).
class GlobalSymbolCache {
 public:
  /// The global name for `func`: the same name for structurally equal functions.
  std::string symbol_for(const Function& func, const IRModule& mod);

 private:
  std::unordered_map<Function, std::string, StructuralHash, StructuralEqual> symbols_;
  std::vector<std::string> names_;  // the names given, in order
};

/// Lifts every "Codegen" function nested inside another function to a global and makes global
/// codegen functions unique: each gets the cache's name ("global_symbol" set to it), calls go
/// through that GlobalVar, and duplicates are removed. `compiler_filter` (when non-empty)
/// restricts to one codegen name.
IRModule outline_compiler_functions(IRModule mod, std::shared_ptr<GlobalSymbolCache> cache = nullptr,
                                    const std::string& compiler_filter = "");
Pass OutlineCompilerFunctions(std::shared_ptr<GlobalSymbolCache> cache = nullptr,
                              std::string compiler_filter = "");

/// Adds "Extern": 1 to every global "Codegen" function (of `compiler_filter`, when given).
IRModule mark_compiler_functions_as_extern(IRModule mod, const std::string& compiler_filter = "");
Pass MarkCompilerFunctionsAsExtern(std::string compiler_filter = "");

/// The function without the attributes `keys`.
Function without_attrs(const Function& func, const std::vector<std::string>& keys);

}  // namespace partita::transform
