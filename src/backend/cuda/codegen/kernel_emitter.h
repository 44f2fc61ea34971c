// One fused function -> one CUDA kernel (internal to the cuda codegen).
//
// Every value of the function is a function of an element index, evaluated inline where it is
// needed (`eval`): elementwise and broadcast ops at the same or a broadcast index, injective ops
// (views, permute_dims, concat, take, slices, pad, ...) at a remapped index. At most one anchor
// (a reduction-like op, matmul / conv2d, or pooling) is computed by a kernel template that calls
// `eval` for its operands (the prologue) and `store_outputs` for each element it produces (the
// epilogue, elementwise values at the anchor's element). Values are memoized per (value, index)
// inside the current scope of the generated code, so elementwise DAGs compute each value once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "../cuda_codegen.h"
#include "../kernel_launch.h"
#include "partita/codegen/codegen.h"
#include "partita/ir/expr.h"

namespace partita::backend::cuda {

/// An element position of a tensor: the tensor's dims as C expressions, and its linear offset
/// (row-major) or its coordinates, or both (at least one is set).
struct Index {
  std::vector<std::string> dims;
  std::string linear;
  std::vector<std::string> coords;
};

/// Generated statements with scopes; each scope has its own memo of computed values.
class CodeWriter {
 public:
  explicit CodeWriter(int indent = 1) : indent_(indent) { memo_.emplace_back(); }
  void line(const std::string& s);
  void open(const std::string& head);             // "head {" and a new scope
  void close(const std::string& tail = "}");      // ends the scope
  void reopen(const std::string& middle);         // "} else {": ends a scope, opens another
  const std::string* find(const std::string& key) const;
  void put(const std::string& key, std::string value) { memo_.back()[key] = std::move(value); }
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_;
  int counter_ = 0;
  std::vector<std::unordered_map<std::string, std::string>> memo_;
};

/// A value of the function being compiled.
struct KValue {
  enum Kind { Param, Const, Prim, Op, Field } kind = Op;
  int param = -1;                          // Param: position in the function's parameters
  const ConstantNode* constant = nullptr;  // Const
  PrimExpr prim;                           // Prim: a scalar operand (R.prim_value)
  const CallNode* call = nullptr;          // Op; Field: the tuple op
  std::string op;                          // Op / Field: the operator name
  int field = -1;                          // Field: the tuple index
  DataType dtype;
  std::vector<PrimExpr> shape;
  std::vector<int> operands;  // tensor operands (Field: those of the tuple op)
  std::string name;           // for messages
  bool is_tuple = false;      // a tuple-valued op: only its fields are values
};

enum class AnchorKind { None, Reduce, RowOp, Pool, Matmul, Conv2d, ArgReduce, Cumsum, TopK, Scatter, ConvTranspose,
                        Attention };

/// An adaptive average pool to one element per channel (float data, the same input and output
/// layout): a mean over H and W, which the row template computes with a group of threads per
/// channel instead of the pool template's one thread walking the whole image.
bool is_global_average_pool(const KValue& v);

class KernelEmitter {
 public:
  /// `sm`: the compute capability compiled for (90 for sm_90), which picks tensor-core paths.
  KernelEmitter(const codegen::CodegenFunction& f, codegen::ConstantNamer& namer, std::vector<std::string>& const_names,
                int sm = 90, GemmTuning tuning = {});
  const GemmTuning& gemm_tuning() const { return tuning_; }

  /// Appends the kernel's source to `source`; returns its launch description.
  KernelFunction emit(std::string& source);

  // ---- used by the op handlers and templates ----
  [[noreturn]] void fail(const std::string& why) const;
  const KValue& value(int id) const { return values_[size_t(id)]; }
  int value_of(const Expr& e);
  CodeWriter& w() { return *w_; }

  /// A dimension as a C expression over the kernel's symbolic arguments.
  std::string dim(const PrimExpr& d);
  std::vector<std::string> dims_of(const std::vector<PrimExpr>& shape);
  std::string numel(const std::vector<PrimExpr>& shape);
  static bool same_shape(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b);

  std::vector<std::string> coords_of(const Index& idx);
  std::string linear_of(const Index& idx);
  /// The index of an operand of shape `in` read by an element of shape `out` (numpy broadcast).
  Index broadcast_index(const Index& idx, const std::vector<PrimExpr>& out, const std::vector<PrimExpr>& in);
  /// A local `pt_idx` holding `expr` (or `expr` itself when it is a name or a number).
  std::string idx_var(const std::string& expr);

  /// Value `v` at `idx` (a compute-type C expression, usually a local's name).
  std::string eval(int v, const Index& idx);
  /// Records that the anchor's value at `idx` is `expr` (before `store_outputs`).
  void set_anchor_value(const Index& idx, const std::string& expr);
  /// Stores every output at the anchor's element `idx` (its linear offset must be set).
  void store_outputs(const Index& idx);

  int anchor() const { return anchor_; }
  /// Whether reading value `v` is a plain load: a parameter or constant, through views and index
  /// remappings only (permute_dims, slices, pads, ...), no arithmetic of fused producers.
  bool plain_read(int v) const;
  /// The 16-bit storage type matrix products of `in` run on tensor cores with ("" for none).
  std::string mma_type(DataType in) const;
  const std::string& index_type() const { return index_type_; }

 private:
  void read_function();
  void classify();
  std::string compute(int v, const Index& idx);          // inline_ops.cc
  std::string compute_field(int v, const Index& idx);    // inline_ops.cc
  std::string compute_resize2d(int v, const Index& idx);  // inline_resize.cc
  void emit_elementwise();                               // kernel_elementwise.cc
  void emit_elementwise_vector();                        // kernel_elementwise.cc
  void emit_reduction();                                 // kernel_row.cc
  void emit_pool();                                      // kernel_pool.cc
  void emit_matmul();                                    // kernel_gemm.cc
  void emit_conv2d();                                    // kernel_gemm.cc
  // The direct convolution of emit_conv2d (few output channels per group); its operand reads
  // and stores are emit_conv2d's, which know the layouts and the fused producers.
  struct DirectConv {
    int data;  // the input's value id (its dtype picks the accumulator)
    PrimExpr images;
    int64_t groups;
    PrimExpr out_h, out_w, group_channels, kernel_h, kernel_w;
    int64_t group_outputs;
    bool unit_stride_w;  // stride and dilation 1 along the width: neighbouring outputs share inputs
    std::function<std::string(const std::string& n, const std::string& ch, const std::string& ih,
                              const std::string& iw)> input;
    std::function<std::string(const std::string& o, const std::string& c, const std::string& kh,
                              const std::string& kw)> weight;
    std::function<std::string(const std::string& o, const std::string& k, int axis)> in_row;
    std::function<void(const std::string& n, const std::string& o, const std::string& oh, const std::string& ow,
                       const std::string& acc)> store;
  };
  void emit_direct_conv(const DirectConv& d);  // kernel_gemm.cc
  void emit_arg_reduce();                                // kernel_arg_reduce.cc
  void emit_cumsum();                                    // kernel_cumsum.cc
  void emit_topk();                                      // kernel_topk.cc
  void emit_scatter();                                   // kernel_scatter.cc
  void emit_conv2d_transpose();                          // kernel_conv_transpose.cc
  void emit_attention();                                 // kernel_attention.cc
  /// The rows of a one-axis template (argmax, cumsum, topk): rows = outer * inner around `axis`
  /// of `shape`, or one row of every element when `axis` is absent. (rows, len, element(row, k)).
  struct AxisRows {
    PrimExpr rows, len;
    std::vector<PrimExpr> shape;
    std::optional<int> axis;
  };
  AxisRows axis_rows(const std::vector<PrimExpr>& shape, std::optional<int64_t> axis);
  /// The linear offset of element `k` of row `row` (C expressions) of `r`.
  std::string row_element(const AxisRows& r, const std::string& row, const std::string& k);
  std::string constant_pointer(const ConstantNode* c);
  runtime::DimProgram program(const PrimExpr& e);
  void set_grid(const PrimExpr& x, const PrimExpr& y, const PrimExpr& z, uint32_t bx, uint32_t by = 1,
                uint32_t bz = 1);
  /// Blocks of 256 threads for `items` work items (at least one block, at most 2^16: the kernels
  /// loop with a grid stride).
  static PrimExpr blocks_for(const PrimExpr& items);
  /// A one-dimensional launch of blocks_for(items) blocks of 256 threads.
  void set_grid_for(const PrimExpr& items) { set_grid(blocks_for(items), int_imm(1), int_imm(1), 256); }
  /// The same with a thread per element of `shape` (grid-stride loops over the anchor's result).
  void set_grid_per_element(const std::vector<PrimExpr>& shape) {
    PrimExpr total = int_imm(1);
    for (const auto& d : shape) total = total * d;
    set_grid_for(total);
  }

  friend struct OpEval;

  const codegen::CodegenFunction& f_;
  codegen::ConstantNamer& namer_;
  std::vector<std::string>& const_names_;
  std::vector<KValue> values_;
  std::unordered_map<const VarNode*, int> var_value_;
  std::unordered_map<const Object*, int> leaf_value_;  // constants and prim values
  std::unordered_map<const VarNode*, std::vector<int>> tuple_value_;  // tuple literals
  std::vector<const TensorStructInfoNode*> inputs_;  // the kernel's inputs (tuple parameters flattened)
  std::vector<int> outputs_;
  int anchor_ = -1;
  AnchorKind anchor_kind_ = AnchorKind::None;
  std::vector<char> down_;  // per value: the anchor or downstream of it
  std::unique_ptr<CodeWriter> w_;
  std::map<const PrimVarNode*, int> sym_slot_;
  std::vector<const PrimVarNode*> syms_;
  std::vector<std::string> const_ptr_names_;  // per constant argument: its name in the table
  std::vector<DataType> const_ptr_dtypes_;
  std::map<std::string, int> const_arg_;      // table name -> argument number
  std::string index_type_ = "pt_i64";
  std::string kernel_name_;
  std::string vector_body_;  // the 16-byte-access variant's body (elementwise kernels), if any
  KernelFunction launch_;
  int64_t max_elements_ = 0;  // largest static element count seen (for the index type)
  bool all_static_ = true;
  int sm_ = 90;
  GemmTuning tuning_;
};

}  // namespace partita::backend::cuda
