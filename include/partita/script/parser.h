// The TVMScript parser: text in the subset printed by printer.h -> IR.
//
// Hand-written lexer and recursive-descent parser. Operators are resolved through the op
// registry (`R.add`, `R.nn.conv2d`, ...); call struct info is inferred by normalization.
// Errors are partita::Error("ParseError", message, SourceLocation{file, line, column}) saying
// what was expected and what was found.
#pragma once

#include <string>
#include <string_view>

#include "partita/ir/module.h"

namespace partita::script {

/// Parses a module (`@I.ir_module class Module: ...`, with an optional metadata section).
IRModule parse_module(std::string_view text, const std::string& filename = "<string>");

/// Parses one standalone `@R.function def name(...): ...` (import comments allowed). The
/// function gets "global_symbol" = its name unless `private=True`.
Function parse_function(std::string_view text, const std::string& filename = "<string>");

}  // namespace partita::script
