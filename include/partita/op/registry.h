// The operator registry: one definition per operator — its name, positional arguments,
// attribute schema (names, kinds, defaults, printing order), struct-info inference and its
// traits (purity, commutativity, view-like, fusion kind, FLOPs and bytes moved; MLIR's op traits,
// TVM's op attributes). Host kernels live with the runtime; the printer, parser, importer,
// matcher, passes, VM lowering and report all read this. Registering an operator also fills the
// IR's operator interface (ir/op_interface.h), which is how the IR infers struct info without
// depending on this layer.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "partita/ir/expr.h"

namespace partita::op {

/// What kind of value an attribute holds (drives parsing and validation).
enum class AttrKind : uint8_t {
  Bool, Int, Float, String, DType, IntList, OptionalInt, OptionalIntList,
  IntOrIntList,  // an int or a list of ints, kept as given (split's indices_or_sections)
  VDevice,       // a virtual device (R.to_vdevice's dst_vdevice)
  OptionalFloat,   // a float or None, TVM's Optional<FloatImm>: printed `T.float32(0.125)`
  OptionalString,  // a string or None (attention's causal_mask)
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

/// How an operator fuses with its neighbours: TVM's OpPatternKind, with its numbering, so that
/// "kind <= Injective" means what it means in TVM. A fusing code generator reads this.
enum class FusionKind : uint8_t {
  ElementWise = 0,      // out[i] = f(in1[i], ...), inputs of the output's shape (exp, astype)
  Broadcast = 1,        // element-wise after numpy broadcasting of the inputs (add, less, where)
  Injective = 2,        // each output element is one input element (reshape, concat, take, pad)
  CommReduce = 3,       // a commutative reduction over axes (sum, max, mean, variance)
  OutEWiseFusable = 4,  // complex; an element-wise epilogue fuses into it (conv2d, matmul, pools,
                        // softmax, normalizations)
  Tuple = 7,            // builds or takes apart tuples
  Opaque = 8,           // fuses with nothing (dropout)
  Unset = 255,          // not declared: a registration mistake (tests/cpp/op fails on one)
};
/// "elementwise", "broadcast", "injective", "comm_reduce", "out_elemwise_fusable", "tuple",
/// "opaque", "unset".
const char* fusion_kind_name(FusionKind kind);

/// Whether a call's result may share its first argument's memory.
enum class ViewKind : uint8_t {
  None,       // the result is new memory
  Always,     // the result is always the first argument's bytes under a new shape (reshape,
              // flatten, squeeze, expand_dims); a lowering may make it a view without copying
  Sometimes,  // a view for some calls only, those whose `view_offset` has a value (a permute_dims
              // that moves only axes of extent 1; a strided_slice that keeps one contiguous run)
};

/// For a ViewKind::Sometimes op: where a call's result starts inside its first argument, in
/// elements, when the result is one contiguous run of that argument's bytes in row-major order
/// (so a lowering may alias it instead of copying); nullopt when the call must copy or its
/// shapes are not static.
using ViewOffsetFn = std::function<std::optional<int64_t>(const CallNode& call)>;

/// A cost of one call as a function of its normalized struct info: a PrimExpr over the symbolic
/// dimensions of its arguments (a constant when every dimension is known, read it with
/// as_const_int), or nullopt when it cannot be written down (a shape of unknown dimensions, a
/// dtype left unknown).
using CostFn = std::function<std::optional<PrimExpr>(const CallNode& call)>;

struct OpDef {
  std::string name;            // "relax.nn.conv2d"
  std::string attrs_type_key;  // "relax.attrs.Conv2DAttrs"; empty when the op has no attributes
  std::vector<ArgSpec> args;
  std::vector<AttrSpec> attrs;  // in TVMScript printing order
  InferFn infer;
  /// Printed name inside TVMScript, e.g. "R.nn.conv2d"; derived from `name` when empty.
  std::string script_name;

  // ---- traits: optional, so a definition that sets none still compiles; fusion_kind is
  // required in practice (see below) ----
  /// False for operators with side effects: such a call is never removed, even when its result
  /// is unused, and stays outside dataflow blocks.
  bool pure = true;
  /// The pattern matcher also tries the operands of a call swapped. Set, as TVM's matcher has
  /// it, on add and multiply only, so that partitions are TVM's.
  bool commutative = false;
  /// R.Prim scalar arguments stand for 0-d tensors (binary element-wise ops and where): the VM
  /// lowering passes them to the kernel as tensors.
  bool scalar_operands_as_tensors = false;
  ViewKind view = ViewKind::None;
  ViewOffsetFn view_offset;  // set when view is Sometimes
  /// Must be set: a test checks that every registered operator has a kind other than Unset.
  FusionKind fusion_kind = FusionKind::Unset;
  /// Floating-point operations of a call. A multiply-add counts 2; every element-wise
  /// arithmetic, comparison, selection, activation or transcendental function 1 per element;
  /// type conversion and data movement 0. When empty, call_flops uses the fusion kind's default.
  CostFn flops;
  /// Bytes a call reads and writes (compulsory traffic: each element it touches once). When
  /// empty, call_bytes counts every tensor argument read whole and every result written once.
  CostFn bytes;
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

/// The definition of the operator `call` calls, or nullptr when its callee is not a registered
/// operator (a function, a variable).
const OpDef* callee_op_def(const CallNode& call);

/// FLOPs of `call` (normalized): its operator's `flops`, or when that is empty the default of its
/// fusion kind — element-wise and broadcast one per output element, injective and tuple none,
/// comm-reduce one per element of the first argument, others (no general formula) nullopt.
/// nullopt also when the callee is not an operator or a needed shape is unknown.
std::optional<PrimExpr> call_flops(const CallNode& call);
/// Bytes `call` (normalized) moves: its operator's `bytes`, or when that is empty every tensor
/// argument (and tensor in a tuple argument) read once plus every tensor result written once.
/// A view-like call counts as the copy it is when not lowered to a view.
std::optional<PrimExpr> call_bytes(const CallNode& call);

}  // namespace partita::op
