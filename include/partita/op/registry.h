// The operator registry: one definition per operator — its name, positional arguments,
// attribute schema (names, kinds, defaults, printing order) and struct-info inference.
// Host kernels live with the runtime; the printer, parser, importer and passes all read this.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "partita/ir/expr.h"

namespace partita::op {

/// What kind of value an attribute holds (drives parsing and validation).
enum class AttrKind : uint8_t {
  Bool, Int, Float, String, DType, IntList, OptionalInt, OptionalIntList,
  IntOrIntList,  // an int or a list of ints, kept as given (split's indices_or_sections)
  VDevice,       // a virtual device (R.to_vdevice's dst_vdevice)
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  AttrValue default_value;  // std::monostate with `required` = no default
  bool required = false;
};

struct ArgSpec {
  std::string name;
  bool optional = false;  // may be omitted (a trailing argument); then the call has fewer args
  bool variadic = false;  // takes all remaining positional arguments (last spec only)
};

/// Struct-info inference: given a call whose arguments are normalized (have struct info),
/// returns the struct info of its result or throws Error("TypeError"/"ValueError") naming the
/// operator and the offending argument.
using InferFn = std::function<StructInfo(const CallNode& call)>;

struct OpDef {
  std::string name;            // "relax.nn.conv2d"
  std::string attrs_type_key;  // "relax.attrs.Conv2DAttrs"; empty when the op has no attributes
  std::vector<ArgSpec> args;
  std::vector<AttrSpec> attrs;  // in TVMScript printing order
  InferFn infer;
  /// Printed name inside TVMScript, e.g. "R.nn.conv2d"; derived from `name` when empty.
  std::string script_name;
};

/// Registers `def`; throws Error("ValueError") if the name is taken.
void register_op(OpDef def);
/// The definition of `name`, or nullptr.
const OpDef* find_op_def(const std::string& name);
/// The definition of `name`; throws Error("KeyError") listing close names when unknown.
const OpDef& get_op_def(const std::string& name);
/// The (interned) Op node for `name`; throws like get_op_def when unknown.
Op get_op(const std::string& name);
/// All registered operator names, sorted.
std::vector<std::string> list_ops();

/// Builds a call of `op_name`: checks the argument count, fills attribute defaults, converts
/// attribute values to their declared kinds, and validates names. Does not infer struct info
/// (the BlockBuilder's normalizer does). Throws Error naming the op and the bad argument.
Call make_call(const std::string& op_name, std::vector<Expr> args,
               std::vector<std::pair<std::string, AttrValue>> attrs = {});

/// Struct info of `call` (a call of a registered Op whose args have struct info).
StructInfo infer_struct_info(const CallNode& call);

}  // namespace partita::op
