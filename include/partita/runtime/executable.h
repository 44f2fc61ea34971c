// The Executable: VM bytecode for every host function, a constant pool (each tensor stored
// once), the named-constant table handed to external modules, and the external runtime modules.
//
// Bytecode is register based. Each function has `num_registers` value registers (a value is a
// tensor or a tuple of values) and `num_sym_vars` int64 slots for symbolic dimensions, bound
// when inputs are matched against the signature. Shapes that depend on symbolic dimensions are
// small postfix programs (DimProgram) evaluated over those slots at run time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "partita/runtime/kernel.h"
#include "partita/runtime/module.h"
#include "partita/runtime/tensor.h"

namespace partita::runtime {

/// Postfix program computing one int64: tokens are (opcode, operand) pairs.
enum class DimOp : int64_t { Const = 0, Var = 1, Add = 2, Sub = 3, Mul = 4, FloorDiv = 5, FloorMod = 6, Min = 7, Max = 8 };
using DimProgram = std::vector<int64_t>;
/// Evaluates `p` over `syms`; Error("ValueError") on malformed programs or division by zero.
int64_t eval_dim(const DimProgram& p, const int64_t* syms, size_t num_syms);

/// The shape and dtype of one result tensor; `dims` are programs (static dims are one Const).
struct TensorSpec {
  DataType dtype;
  bool is_static = true;
  std::vector<int64_t> static_shape;  // when is_static
  std::vector<DimProgram> dims;       // otherwise
  /// Where the tensor is allocated. Kinds map to the VM's devices: CPU is the host, another
  /// kind is the VM's device of that kind (id 0 = the VM's device; see VirtualMachine).
  Device device;
};

/// How one dimension of a matched tensor is checked: bind a fresh symbolic slot, or compare.
struct DimMatch {
  bool bind = false;
  int32_t slot = -1;   // when bind
  DimProgram expect;   // otherwise
};

enum class Opcode : uint8_t {
  CallKernel,   // dst = kernel[index](args; attrs[attrs]) into fresh outputs `outs` (allocated on
                //   their spec's device; host kernels read host inputs, see runtime/kernel.h)
  CallExtern,   // dst = extern_symbols[index](args) into fresh outputs `outs`
  CallFunc,     // dst = functions[index](args)
  View,         // dst = args[0] viewed with outs[0]'s shape (reshape and friends, no copy); with
                //   index >= 0, outs[0]'s bytes of args[0] from byte index on (a contiguous slice)
  MakeTuple,    // dst = (args...)
  GetItem,      // dst = args[0][index]
  LoadConst,    // dst = constants[index]
  Move,         // dst = args[0]
  PrimToTensor, // dst = 0-d tensor of outs[0].dtype holding dims program `prim`
  MatchTensor,  // checks args[0] against dtype/ndim/dims (binding slots); dst = args[0]
  JumpIfFalse,  // if !bool(args[0]) goto index
  Goto,         // goto index
  Ret,          // return args[0]
};

struct Instruction {
  Opcode op = Opcode::Move;
  int32_t dst = -1;
  int32_t index = -1;
  std::vector<int32_t> args;
  std::vector<TensorSpec> outs;
  bool tuple_result = false;  // CallKernel/CallExtern: result is a tuple of `outs`
  int32_t attrs = -1;         // CallKernel: index into Function::attrs
  /// CallKernel: integer-list attributes computed at run time from symbolic dimensions.
  std::vector<std::pair<std::string, std::vector<DimProgram>>> dyn_attrs;
  // MatchTensor:
  DataType match_dtype;       // void: any
  int32_t match_ndim = -1;    // -1: any
  std::vector<DimMatch> match_dims;
  std::string name;           // what is matched (for errors) / PrimToTensor unused
  DimProgram prim;            // PrimToTensor
  /// Registers whose values are dead after this instruction (liveness from the lowering).
  std::vector<int32_t> kills;
};

struct VMFunction {
  std::string name;
  std::vector<std::string> param_names;
  int32_t num_registers = 0;
  int32_t num_sym_vars = 0;
  std::vector<Instruction> code;
  std::vector<KernelAttrs> attrs;
  /// Where each parameter is expected (mapped like TensorSpec::device). The VM copies
  /// arguments given elsewhere to these devices on entry; empty: where its readers need them.
  std::vector<Device> param_devices;
};

class Executable {
 public:
  std::vector<VMFunction> functions;
  std::vector<std::string> kernel_names;    // CallKernel index
  std::vector<std::string> extern_symbols;  // CallExtern index
  std::vector<Tensor> constants;            // the pool
  std::map<std::string, int32_t> named_constants;  // name -> pool index
  std::vector<ModulePtr> external_modules;

  /// Adds `t` to the pool unless an equal tensor is there; returns its index.
  int32_t add_constant(const Tensor& t);
  int32_t function_index(const std::string& name) const;  // -1 if absent
  std::map<std::string, Tensor> named_constant_map() const;
  /// Gives every external module (and its imports) the named constants.
  void init_external_modules() const;

  /// Serializes everything (see docs in executable.cc: magic, version, sections, checksum).
  void save(std::string& out) const;
  static std::shared_ptr<Executable> load(std::string_view bytes);
  /// Writes one file holding the whole artifact; Error("IOError") on failure.
  void export_library(const std::string& path) const;
  /// A readable listing of the bytecode.
  std::string as_text() const;

 private:
  // content_hash of constants[i], filled by add_constant as the pool grows (the pool is only
  // ever appended to), so deduplication hashes each tensor once.
  std::vector<size_t> constant_hashes_;
};

/// Reads a file written by Executable::export_library.
std::shared_ptr<Executable> load_module(const std::string& path);

}  // namespace partita::runtime
