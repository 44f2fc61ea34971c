// Struct info: what is statically known about a value (TVM Relax's StructInfo).
#pragma once

#include <optional>
#include <vector>

#include "partita/ir/global_info.h"
#include "partita/ir/prim_expr.h"

namespace partita {

class StructInfoNode : public Object {
 public:
  using Object::Object;
  static bool classof(NodeKind k) {
    return k >= NodeKind::ObjectStructInfo && k <= NodeKind::FuncStructInfo;
  }
};
using StructInfo = Ref<StructInfoNode>;

/// Anything (R.Object).
class ObjectStructInfoNode : public StructInfoNode {
 public:
  PARTITA_NODE(ObjectStructInfo)
  ObjectStructInfoNode() : StructInfoNode(kKind) {}
  static constexpr auto declared_fields() { return std::tuple<>(); }
};

/// A scalar of `dtype`, optionally with a known (symbolic) value (R.Prim("int64")).
class PrimStructInfoNode : public StructInfoNode {
 public:
  PARTITA_NODE(PrimStructInfo)
  explicit PrimStructInfoNode(DataType dtype, PrimExpr value = {})
      : StructInfoNode(kKind), dtype(dtype), value(std::move(value)) {}
  DataType dtype;
  PrimExpr value;  // may be null
  static constexpr auto declared_fields() {
    return std::make_tuple(field("dtype", &PrimStructInfoNode::dtype), field("value", &PrimStructInfoNode::value));
  }
};

/// A shape value (R.Shape([n, 4]) / R.Shape(ndim=2) / R.Shape).
class ShapeStructInfoNode : public StructInfoNode {
 public:
  PARTITA_NODE(ShapeStructInfo)
  /// Known dimensions; ndim is their count.
  explicit ShapeStructInfoNode(std::vector<PrimExpr> values)
      : StructInfoNode(kKind), values(std::move(values)), ndim(int(this->values->size())) {}
  /// Unknown dimensions, `ndim` (or -1 when unknown).
  explicit ShapeStructInfoNode(int ndim) : StructInfoNode(kKind), ndim(ndim) {}
  std::optional<std::vector<PrimExpr>> values;
  int ndim;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("values", &ShapeStructInfoNode::values), field("ndim", &ShapeStructInfoNode::ndim));
  }
};

/// A tensor: dtype (void if unknown), either a known shape or only its ndim (-1 if unknown), and
/// the virtual device it lives on (null when not known; TVM's optional vdevice).
class TensorStructInfoNode : public StructInfoNode {
 public:
  PARTITA_NODE(TensorStructInfo)
  TensorStructInfoNode(std::vector<PrimExpr> shape, DataType dtype, VDevice vdevice = {})
      : StructInfoNode(kKind), shape(std::move(shape)), dtype(dtype), vdevice(std::move(vdevice)),
        ndim(int(this->shape->size())) {}
  TensorStructInfoNode(DataType dtype, int ndim, VDevice vdevice = {})
      : StructInfoNode(kKind), dtype(dtype), vdevice(std::move(vdevice)), ndim(ndim) {}
  std::optional<std::vector<PrimExpr>> shape;
  DataType dtype;
  VDevice vdevice;  // may be null
  int ndim;
  bool is_unknown_ndim() const { return ndim < 0; }
  static constexpr auto declared_fields() {
    return std::make_tuple(field("shape", &TensorStructInfoNode::shape), field("dtype", &TensorStructInfoNode::dtype),
                           field("vdevice", &TensorStructInfoNode::vdevice),
                           field("ndim", &TensorStructInfoNode::ndim));
  }
};
using TensorStructInfo = Ref<TensorStructInfoNode>;

class TupleStructInfoNode : public StructInfoNode {
 public:
  PARTITA_NODE(TupleStructInfo)
  explicit TupleStructInfoNode(std::vector<StructInfo> fields)
      : StructInfoNode(kKind), fields(std::move(fields)) {}
  std::vector<StructInfo> fields;
  static constexpr auto declared_fields() { return std::make_tuple(field("fields", &TupleStructInfoNode::fields)); }
};
using TupleStructInfo = Ref<TupleStructInfoNode>;

/// A function's signature (R.Callable((params...), ret, purity)). `params` absent = opaque.
class FuncStructInfoNode : public StructInfoNode {
 public:
  PARTITA_NODE(FuncStructInfo)
  FuncStructInfoNode(std::optional<std::vector<StructInfo>> params, StructInfo ret, bool purity = true)
      : StructInfoNode(kKind), params(std::move(params)), ret(std::move(ret)), purity(purity) {}
  std::optional<std::vector<StructInfo>> params;
  StructInfo ret;
  bool purity;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("params", &FuncStructInfoNode::params), field("ret", &FuncStructInfoNode::ret),
                           field("purity", &FuncStructInfoNode::purity));
  }
};
using FuncStructInfo = Ref<FuncStructInfoNode>;

// Shorthands.
StructInfo object_sinfo();
StructInfo tensor_sinfo(std::vector<PrimExpr> shape, DataType dtype);
StructInfo tensor_sinfo(std::vector<int64_t> shape, DataType dtype);
StructInfo tensor_sinfo_ndim(DataType dtype, int ndim = -1);
StructInfo tuple_sinfo(std::vector<StructInfo> fields);
StructInfo shape_sinfo(std::vector<PrimExpr> values);
StructInfo prim_sinfo(DataType dtype, PrimExpr value = {});

/// `sinfo` (a tensor struct info) on `vdevice`, keeping its shape or ndim and dtype.
StructInfo tensor_sinfo_on(const TensorStructInfoNode& sinfo, VDevice vdevice);

/// The dimensions of a tensor struct info whose shape is fully known and constant, else nullopt.
std::optional<std::vector<int64_t>> static_shape(const StructInfo& sinfo);

}  // namespace partita
