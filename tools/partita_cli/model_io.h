// Loading what the user names on the command line: an ONNX model or a TVMScript module, and
// the backends and targets to compile it for.
#pragma once

#include <string>
#include <vector>

#include "partita/codegen/collage.h"
#include "partita/codegen/target.h"
#include "partita/ir/module.h"

namespace partita::cli {

/// Imports an ONNX file (.onnx) or parses a TVMScript module (anything else that reads as
/// text: .py, .txt, ...). Error("IOError") for a missing or unreadable file.
IRModule load_model(const std::string& path);

/// Splits "a,b" and checks every name has registered patterns (Error("ValueError")
/// listing the available backends otherwise).
std::vector<std::string> parse_backends(const std::vector<std::string>& specs);

/// What --backends asks for: a priority list ("a,b": each backend partitions what the earlier
/// ones left), or placement by measurement among backends ("auto", "auto:a,b":
/// CollagePartition; "auto" alone offers every backend with patterns and a code generator).
struct BackendChoice {
  std::vector<std::string> backends;
  bool collage = false;
};
BackendChoice parse_backend_choice(const std::vector<std::string>& specs);

/// Partitions `mod` as `choice` says; `targets` are what candidates are built with when
/// measuring. Prints Collage's placement when `verbose`.
IRModule partition(IRModule mod, const BackendChoice& choice, bool merge,
                   const std::vector<codegen::Target>& targets = {}, bool verbose = false,
                   codegen::CollageResult* placement = nullptr);

/// Parses a target string "kind -opt=value -list=a,b" using the kind's declared option types.
codegen::Target parse_target(const std::string& text);

}  // namespace partita::cli
