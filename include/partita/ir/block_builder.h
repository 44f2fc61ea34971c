// BlockBuilder: builds Relax functions binding by binding and normalizes what it is given
// (TVM Relax's BlockBuilder).
//
// High-level use (mirrors Python's `with bb.function(...)` / `with bb.dataflow()`):
//
//   BlockBuilder bb;
//   bb.begin_function("main", {x, y});
//   bb.begin_dataflow();
//   Var lv = bb.emit(op::make_call("relax.multiply", {x, y}));   // DataflowVar "lv"
//   Var gv = bb.emit_output(lv);                                   // Var "gv"
//   bb.end_dataflow();
//   bb.emit_func_output(gv);         // closes any open block and the function, adds it
//   IRModule mod = bb.get();
//
// Names come from one name supply per builder: an empty hint gives "lv" inside a dataflow block
// and "gv" outside (or through emit_output); repeated hints get "1", "2", ... appended
// ("lv", "lv1", "lv2"), and dots become underscores — exactly TVM's NameSupply rule.
//
// Normalization (`normalize`) fills `struct_info_` of every node and puts expressions into the
// canonical form TVM uses: call/tuple arguments that are not leaves are emitted as bindings of
// the current block, function bodies and If branches become SeqExprs, nested SeqExprs bound to
// variables are flattened, adjacent blocks of the same kind are merged and empty ones dropped.
//
// Misuse (emit outside a function or block, emit_output outside a dataflow block, ...) throws
// partita::Error("ValueError") naming the call.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "partita/ir/module.h"
#include "partita/ir/name_supply.h"

namespace partita {

class BlockBuilder {
 public:
  /// `mod`: the context module that functions are added to (an empty one when absent).
  explicit BlockBuilder(std::optional<IRModule> mod = std::nullopt);
  ~BlockBuilder();
  BlockBuilder(const BlockBuilder&) = delete;
  BlockBuilder& operator=(const BlockBuilder&) = delete;

  // ---- high-level function construction ----

  /// Starts function `name` with `params` (their struct info must be set). Unless `is_private`,
  /// the function gets attribute "global_symbol" = name. Opens a (non-dataflow) binding block.
  void begin_function(const std::string& name, std::vector<Var> params, DictAttrs attrs = {},
                      bool is_pure = true, bool is_private = false);
  /// Opens a dataflow block inside the current function (closing the current plain block).
  void begin_dataflow();
  /// Closes the dataflow block opened by begin_dataflow and reopens a plain block.
  void end_dataflow();
  /// Normalizes `output`, closes any open block, finishes the function and adds it to the
  /// context module; returns its GlobalVar.
  GlobalVar emit_func_output(const Expr& output);
  /// The context module (all functions added so far).
  IRModule get() const { return context_mod_; }
  /// Whether begin_function was called and the function is not finished yet.
  bool in_function() const { return func_.has_value(); }
  /// Whether begin_dataflow was called and end_dataflow not yet.
  bool in_dataflow() const { return func_ && func_->in_dataflow; }

  // ---- emitting bindings ----

  /// Normalizes `expr`, binds it to a fresh variable in the current block and returns it
  /// (a DataflowVar in a dataflow block, named `name_hint` or "lv"; else a Var, or "gv").
  Var emit(const Expr& expr, const std::string& name_hint = "");
  /// Inside a dataflow block: binds `expr` to a (non-dataflow) Var visible after the block.
  Var emit_output(const Expr& expr, const std::string& name_hint = "");
  /// Emits `var = R.match_cast(value, sinfo)`; throws when the cast can never succeed.
  Var emit_match_cast(const Expr& value, const StructInfo& sinfo, const std::string& name_hint = "");
  /// Appends an already-normalized binding to the current block.
  void emit_normalized(const Binding& binding);

  // ---- lower-level scope and block control (used by passes and mutators) ----

  /// Enters a variable scope; the symbolic variables defined by `params`' struct info are in
  /// scope (kept when struct info is erased to what is well defined).
  void begin_scope(std::optional<std::vector<Var>> params = std::nullopt);
  void end_scope();
  void begin_binding_block();
  void begin_dataflow_block();
  /// Closes the innermost block and returns it.
  BindingBlock end_block();
  bool current_block_is_dataflow() const;
  bool in_block() const { return !block_stack_.empty(); }

  /// The normalized form of `expr` (see the file comment). May emit bindings for nested
  /// non-leaf arguments into the current block (which then must exist).
  Expr normalize(const Expr& expr);
  /// Normalizes a call/tuple argument: returns a leaf, binding non-leaf values to new vars.
  Expr normalize_argument(const Expr& expr);
  /// The struct info normalize() gives a call, tuple, get-item or leaf whose operands have
  /// struct info already, without emitting anything or changing `expr` (for front ends that
  /// build their own nodes, e.g. the parser). Throws what normalize() throws.
  StructInfo derive_struct_info(const Expr& expr);

  // ---- module-level ----

  /// Adds `func` to the context module under a fresh name derived from `name_hint` (and sets
  /// the GlobalVar's struct info to the function's); returns the GlobalVar. As in TVM, a function
  /// structurally equal to one already in the module is not added again: the existing GlobalVar
  /// (the first by name when several match) is returned.
  GlobalVar add_function(const Expr& func, const std::string& name_hint);
  /// Replaces the function bound to `gv` in the context module.
  void update_function(const GlobalVar& gv, const Expr& func);
  /// A fresh name from this builder's name supply (TVM's FreshName without underscore).
  std::string get_unique_name(const std::string& hint);
  /// The value bound to `var` by a VarBinding emitted through this builder, or null.
  Expr lookup_binding(const Var& var) const;
  IRModule context_module() const { return context_mod_; }

 private:
  struct BlockFrame {
    std::vector<Binding> bindings;
    bool is_dataflow;
    // Arguments already bound in this block by normalize_argument.
    std::unordered_map<Expr, Var, RefHash, RefEq> normalize_binding_map;
  };
  struct ScopeFrame {
    // Symbolic variables defined in the scope, mapped to the value they stand for.
    std::unordered_map<PrimVar, PrimExpr, RefHash, RefEq> shape_var_map;
  };
  struct FunctionFrame {
    std::string name;
    std::vector<Var> params;
    DictAttrs attrs;
    bool is_pure;
    std::vector<BindingBlock> blocks;
    bool in_dataflow = false;
  };
  friend class BlockBuilderNormalizer;

  Var emit_impl(const Expr& expr, bool is_dataflow, const std::string& name_hint);
  Var create_var(bool is_dataflow, const std::string& name_hint);
  BlockFrame& current_block(const char* what);
  void close_function_block();
  StructInfo erase_to_well_defined_in_scope(const StructInfo& sinfo) const;

  IRModule context_mod_;
  NameSupply names_;
  std::vector<BlockFrame> block_stack_;
  std::vector<ScopeFrame> scope_stack_;
  std::unordered_map<Var, Expr, RefHash, RefEq> binding_table_;
  std::optional<FunctionFrame> func_;
};

}  // namespace partita
