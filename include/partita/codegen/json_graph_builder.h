// What backends that serialize a JSON graph of their partitions share when lowering one offloaded function: values
// numbered in order with their static float32 shapes, parameters bound to the first values, and
// float32 constants read by name from `const_name_to_constant` (each registered once).
#pragma once

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "partita/codegen/codegen.h"
#include "partita/codegen/partition_walker.h"

namespace partita::codegen {

/// The static shape of a float32 tensor expression, else nullopt.
inline std::optional<std::vector<int64_t>> static_f32_shape(const Expr& e) {
  if (!e.defined() || !e->struct_info_) return std::nullopt;
  const auto* t = e->struct_info_.as<TensorStructInfoNode>();
  if (!t || t->dtype != DataType::Float(32)) return std::nullopt;
  return static_shape(e->struct_info_);
}

class JsonGraphBuilder {
 public:
  JsonGraphBuilder(const CodegenFunction& f, ConstantNamer& namer, std::vector<std::string>& const_names)
      : f_(f), namer_(namer), const_names_(const_names) {}

  /// Refuses the function being lowered.
  [[noreturn]] void fail(const std::string& why) const { throw UnsupportedFunction(f_.symbol, why); }

  /// A variable's value from `env`, or the value of a float32 constant.
  int leaf(const Expr& e, ValueEnv<int>& env) {
    if (auto* v = e.as<VarNode>()) {
      auto it = env.find(v);
      if (it == env.end()) fail("variable '" + v->name_hint + "' is not a tensor computed here");
      return it->second;
    }
    if (auto* c = e.as<ConstantNode>()) {
      if (c->data.dtype() != DataType::Float(32)) fail("a constant of dtype " + c->data.dtype().str());
      std::string name = namer_.name_for(c->data, f_.symbol);
      if (auto it = const_ids_.find(name); it != const_ids_.end()) return it->second;
      int id = new_value(c->data.shape());
      const_ids_[name] = id;
      constants_.push_back({{"value", id}, {"name", name}});
      if (std::find(const_names_.begin(), const_names_.end(), name) == const_names_.end()) const_names_.push_back(name);
      return id;
    }
    fail(std::string("an argument is a ") + node_kind_name(e->kind()));
  }

 protected:
  int new_value(const std::vector<int64_t>& shape) {
    values_.push_back(shape);
    return int(values_.size()) - 1;
  }

  /// Gives each parameter of the function a value in `env`; returns their ids in order.
  nlohmann::json bind_params(ValueEnv<int>& env) {
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& p : f_.func->params) {
      auto shape = static_f32_shape(p);
      if (!shape) fail("parameter '" + p->name_hint + "' is not a float32 tensor of static shape");
      env[p.get()] = new_value(*shape);
      inputs.push_back(env[p.get()]);
    }
    return inputs;
  }

  /// The graph's common fields: the symbol, the values' shapes, the input and output value ids
  /// and the constants (the backend adds its nodes).
  nlohmann::json graph(const nlohmann::json& inputs, const std::vector<int>& outputs) const {
    return {{"symbol", f_.symbol}, {"values", values_},       {"inputs", inputs},
            {"outputs", outputs},  {"constants", constants_}};
  }

  const CodegenFunction& f_;
  ConstantNamer& namer_;
  std::vector<std::string>& const_names_;
  nlohmann::json values_ = nlohmann::json::array();     // value id -> shape
  nlohmann::json constants_ = nlohmann::json::array();  // {"value": id, "name": constant name}
  std::map<std::string, int> const_ids_;
};

}  // namespace partita::codegen
