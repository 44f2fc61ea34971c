// Builds small ONNX models in tests (protobuf, no Python).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>

#include <string>
#include <vector>

#include "partita/runtime/half.h"

namespace partita::testing {

/// One dimension of a graph input: a size (>= 0), a dim_param name, or unknown ("?").
struct Dim {
  Dim(int64_t v) : value(v) {}                 // NOLINT: implicit for brace lists
  Dim(const char* p) : param(p) {}             // NOLINT
  int64_t value = -1;
  std::string param;
};

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("g");
  }

  void input(const std::string& name, std::vector<Dim> dims, int elem = onnx::TensorProto::FLOAT) {
    value_info(model_.mutable_graph()->add_input(), name, dims, elem);
  }
  void output(const std::string& name, int elem = onnx::TensorProto::FLOAT) {
    auto* vi = model_.mutable_graph()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  void init_float(const std::string& name, std::vector<int64_t> dims, std::vector<float> data) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (auto v : data) t->add_float_data(v);
  }
  /// A float16 (elem FLOAT16) or bfloat16 (BFLOAT16) initializer from float values, as raw bits.
  void init_16bit(const std::string& name, int elem, std::vector<int64_t> dims, std::vector<float> data) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (auto d : dims) t->add_dims(d);
    std::string raw;
    for (float v : data) {
      uint16_t bits = elem == onnx::TensorProto::FLOAT16 ? runtime::float_to_half_bits(v) : runtime::float_to_bfloat16_bits(v);
      raw.append(reinterpret_cast<const char*>(&bits), 2);
    }
    t->set_raw_data(raw);
  }
  void init_int64(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> data) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (auto d : dims) t->add_dims(d);
    for (auto v : data) t->add_int64_data(v);
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                        const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + std::to_string(model_.graph().node_size()) : name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return *n;
  }
  static void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_float(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr_ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr_tensor_int64(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> dims,
                                std::vector<int64_t> data) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    for (auto d : dims) t->add_dims(d);
    for (auto v : data) t->add_int64_data(v);
  }

  onnx::ModelProto& model() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  static void value_info(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<Dim>& dims, int elem) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (d.value >= 0) dim->set_dim_value(d.value);
      else if (!d.param.empty() && d.param != "?") dim->set_dim_param(d.param);
    }
  }
  onnx::ModelProto model_;
};

}  // namespace partita::testing
