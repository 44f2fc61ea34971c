// The TVMScript printer: IR -> text in the TVMScript subset for Relax, exactly as Apache TVM
// prints it (with `partita.script` in the import comments).
//
// Constants that are not scalars print as `metadata["relax.expr.Constant"][i]`; their contents
// follow the module in a commented metadata section (see src/script/metadata.h) so that
// parse_module(print_module(m)) rebuilds them.
#pragma once

#include <string>

#include "partita/ir/module.h"

namespace partita::script {

struct PrintOptions {
  /// Append the `# Metadata:` section holding non-scalar constants (needed to parse back).
  bool show_metadata = true;
};

/// The module as TVMScript text (no trailing newline, as TVM's `script()`).
std::string print_module(const IRModule& mod, const PrintOptions& options = {});

/// A TVMScript fragment for a function, expression, binding or struct info (debugging, errors,
/// the Python `script()` of a node). A Function prints as a standalone `@R.function`.
std::string print_expr(const ObjectRef& node, const PrintOptions& options = {});

}  // namespace partita::script
