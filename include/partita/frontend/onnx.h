// The ONNX importer: an ONNX model (opsets 13-17) -> an IRModule with one function `main`
// (TVM Relax's relax.frontend.onnx.from_onnx).
//
// The graph becomes `main`: graph inputs are its parameters (static dims stay static, a
// dim_param becomes a symbolic variable shared by every input naming it, a dim with neither
// becomes a fresh symbolic variable), every node is emitted through the BlockBuilder into one
// dataflow block (so struct info is inferred and checked op by op), and the graph outputs are
// returned (a tuple when there are several). Initializers become constants, or trailing
// parameters when `keep_params_in_input`. Shape arithmetic over int64 vectors (Shape, Gather,
// Unsqueeze, Concat, Slice, ...) is evaluated at import, so Reshape/Expand receive a known
// (possibly symbolic) shape.
//
// Errors are partita::Error: "ValueError" naming the file and node for bad models (undefined
// input names, wrong arity, unsupported opset), "NotImplementedError" listing every unsupported
// operator type with its node names, "IOError" for unreadable or corrupted files.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "partita/ir/module.h"

namespace onnx {
class ModelProto;
}

namespace partita::frontend {

/// One dimension given by the user: a size, or the name of a symbolic variable.
using InputDim = std::variant<int64_t, std::string>;

struct OnnxImportOptions {
  /// Shapes that replace those declared for the named graph inputs.
  std::map<std::string, std::vector<InputDim>> shape_dict;
  /// Initializers become parameters of `main` (after the graph inputs) instead of constants;
  /// their tensors are recorded under attribute "params" of the module (see `params_of`).
  bool keep_params_in_input = false;
  /// Opset to import as; the model's own ai.onnx opset when absent.
  std::optional<int64_t> opset;
  /// Name used in error messages (the file name when importing a file).
  std::string source_name = "<model>";
  /// The most bytes of constants the importer makes itself, all together, from sizes a model
  /// declares rather than data it holds (EyeLike's matrix, Range, OneHot's coordinates, window
  /// functions, InstanceNormalization's unit scale): a 300-byte model can declare a 10^5 x 10^5
  /// EyeLike (80 GB). Going over is a ValueError naming the node. Initializers are not counted:
  /// their bytes are in the model already. The default, 1 GiB, is far above what real models make.
  int64_t max_constant_bytes = int64_t(1) << 30;
};

/// Imports `model`.
IRModule from_onnx(const ::onnx::ModelProto& model, const OnnxImportOptions& options = {});
/// Imports a serialized ModelProto.
IRModule from_onnx_bytes(std::string_view bytes, const OnnxImportOptions& options = {});
/// Reads and imports the ONNX file at `path` (errors name the file).
IRModule from_onnx_file(const std::string& path, OnnxImportOptions options = {});

/// With keep_params_in_input: the initializer tensors in parameter order (after the inputs).
std::vector<std::pair<std::string, Tensor>> onnx_params_of(const IRModule& mod);

/// A serialized ONNX TensorProto (e.g. a conformance test's input_0.pb) as a Tensor.
Tensor onnx_tensor_from_bytes(std::string_view bytes, const std::string& source_name = "<tensor>");

/// ONNX operator types (default domain) the importer converts, sorted.
std::vector<std::string> onnx_supported_ops();

}  // namespace partita::frontend
