// Internals of the ONNX importer shared by the graph driver and the operator converters.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "partita/frontend/onnx.h"
#include "partita/ir/block_builder.h"
#include "partita/op/ops.h"
#include "partita/support/error.h"

namespace partita::frontend::onnx_detail {

/// An int64/int32 tensor of rank 0 or 1 whose elements are known at import (possibly symbolic:
/// `Shape` of an input with a batch dim `n` gives [n, 3, 224, 224]). Shape arithmetic is
/// evaluated on these, so a Reshape receives a shape instead of a tensor computed at run time.
struct SymVec {
  std::vector<PrimExpr> values;
  bool scalar = false;                   // rank 0 (then values has one element)
  DataType dtype = DataType::Int(64);
  bool all_const() const;
  std::vector<int64_t> consts() const;  // requires all_const()
};

/// A value in the graph: an expression, and/or an import-time int vector.
struct Value {
  Expr expr;                   // null when only `sym` is known
  std::optional<SymVec> sym;
};

class Importer;

/// What a converter sees of one node.
class NodeContext {
 public:
  NodeContext(Importer& imp, const ::onnx::NodeProto& node, int64_t opset);
  const ::onnx::NodeProto& node;
  int64_t opset;

  // ---- inputs ----
  size_t num_inputs() const { return size_t(node.input_size()); }
  /// Input `i` is given (present and not the empty name).
  bool has_input(size_t i) const;
  /// Input `i` as an expression (int vectors known at import are materialized as constants).
  Expr input(size_t i) const;
  /// Input `i` as it is (expression and/or import-time vector), for pass-through ops.
  Value input_value(size_t i) const;
  /// Input `i` as an import-time int vector, when it is one (constant int tensors of rank <= 1
  /// count).
  std::optional<SymVec> input_sym(size_t i) const;
  /// Input `i`'s constant tensor, when it is a constant.
  std::optional<Tensor> input_const(size_t i) const;
  /// Input `i` as constant integers; fails naming `what` when not known at import.
  std::vector<int64_t> const_ints(size_t i, const std::string& what) const;
  /// Input `i` as a constant scalar (first element), converted to double.
  double const_scalar(size_t i, const std::string& what) const;

  // ---- struct info of inputs ----
  const TensorStructInfoNode& tensor_info(size_t i) const;
  DataType dtype(size_t i) const;
  int ndim(size_t i) const;  // fails when unknown
  /// The (possibly symbolic) shape of input `i`; fails when unknown.
  std::vector<PrimExpr> shape(size_t i) const;

  // ---- attributes ----
  const ::onnx::AttributeProto* attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::optional<std::vector<int64_t>> attr_ints(const std::string& name) const;

  // ---- building ----
  /// Emits `e` into the dataflow block and returns the bound variable.
  Expr emit(const Expr& e) const;
  /// A scalar constant of dtype `dtype`.
  Expr scalar(double v, DataType dtype) const;
  /// A constant of `shape` and `dtype` whose every element is `v`; counted against the
  /// importer's constant budget (reserve_constant, naming `what`) unless it is a scalar.
  Expr full(const std::vector<int64_t>& shape, double v, DataType dtype, const std::string& what) const;
  /// Number of outputs the graph uses (trailing empty names dropped).
  size_t num_outputs() const;
  /// Whether output `i` is named (used by the graph).
  bool has_output(size_t i) const;

  /// Counts a constant of `shape` and `dtype` that the converter is about to make from sizes
  /// the model declares; fails (ValueError, naming `what`, its size and the limit) when the
  /// importer's constants would exceed OnnxImportOptions::max_constant_bytes.
  void reserve_constant(const std::vector<int64_t>& shape, DataType dtype, const std::string& what) const;

  /// Throws Error(kind, message); the driver adds the file and node name.
  [[noreturn]] void fail(const std::string& message, const std::string& kind = "ValueError") const;

  Importer& imp;
};

using ConvertFn = std::function<std::vector<Value>(NodeContext&)>;

/// The converter table, by ONNX op type (default domain).
const std::map<std::string, ConvertFn>& converters();

// Registration of converter families (one file each).
void register_elementwise(std::map<std::string, ConvertFn>& t);
void register_nn(std::map<std::string, ConvertFn>& t);
void register_shape(std::map<std::string, ConvertFn>& t);
void register_reduce(std::map<std::string, ConvertFn>& t);
void register_index(std::map<std::string, ConvertFn>& t);
void register_einsum(std::map<std::string, ConvertFn>& t);
void register_signal(std::map<std::string, ConvertFn>& t);

/// Puts back together the operators exporters spell out in primitive nodes (GELU, and
/// LayerNormalization before opset 17) in `f`: fuse_exported_patterns.cc.
Function fuse_exported_patterns(const Function& f, const IRModule& mod);

// ---- helpers shared by converters ----

/// ONNX TensorProto data type -> DataType; fails (NotImplementedError) for strings and others.
DataType onnx_dtype(int elem_type, const std::string& where);
/// A TensorProto's contents as a Tensor (raw_data or typed fields); fails with a clear message
/// on external data or size mismatches.
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& where);
/// A constant expression for `t`.
Expr constant(const Tensor& t);
/// Two float operands of different dtypes, which ONNX forbids but PyTorch's exporter writes into
/// float16 graphs: a constant takes the other's dtype, a float32 operand meeting a 16-bit one the
/// 16-bit dtype (importer.cc); other mismatches are left for the operator to report.
void unify_float_dtypes(const NodeContext& ctx, Expr& a, Expr& b);
/// An int vector as a constant tensor (rank 0 or 1); fails when an element is symbolic.
Tensor materialize(const SymVec& v, const std::string& where);
/// A tensor's elements converted to int64 (integer and bool dtypes, or float).
std::vector<int64_t> tensor_ints(const Tensor& t);
std::vector<double> tensor_doubles(const Tensor& t);
/// Normalized axis in [0, ndim); fails naming the node when out of range.
int64_t norm_axis(const NodeContext& ctx, int64_t axis, int64_t ndim);

}  // namespace partita::frontend::onnx_detail
