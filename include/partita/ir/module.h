// IRModule: the unit passes transform — functions by global name, plus module attributes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "partita/ir/expr.h"
#include "partita/ir/global_info.h"
#include "partita/runtime/module.h"

namespace partita {

/// Runtime modules produced by external codegens (module attribute "external_mods"). The modules
/// are not IR: equality and hashing see only `summary` (type key and symbols of each module).
class ExternalModulesNode : public Object {
 public:
  PARTITA_NODE(ExternalModules)
  explicit ExternalModulesNode(std::vector<runtime::ModulePtr> modules)
      : Object(kKind), modules(std::move(modules)) {
    for (const auto& m : this->modules) {
      std::string line = m->type_key() + ":";
      for (const auto& sym : m->function_names()) line += " " + sym;
      summary.push_back(std::move(line));
    }
  }
  std::vector<runtime::ModulePtr> modules;
  /// "<type_key>: sym1, sym2" per module, in order.
  std::vector<std::string> summary;
  static constexpr auto declared_fields() {
    return std::make_tuple(field("summary", &ExternalModulesNode::summary));
  }
};
using ExternalModules = Ref<ExternalModulesNode>;

class IRModuleNode : public Object {
 public:
  PARTITA_NODE(IRModule)
  IRModuleNode() : Object(kKind) {}
  /// Functions keyed by name; a std::map so iteration (and printing) is sorted and deterministic.
  std::map<std::string, std::pair<GlobalVar, Expr>> functions;  // value: Function or ExternFunc
  /// Named tensors shared with backends ("const_name_to_constant"), sorted by name.
  std::map<std::string, Tensor> const_name_to_constant;
  /// Other module attributes (e.g. "external_mods"), by name.
  std::map<std::string, ObjectRef> attrs;
  /// Global infos by name (TVM's IRModule::global_infos), e.g. "vdevice": the virtual devices
  /// that struct info and R.to_vdevice refer to, in declaration order (which TVMScript's
  /// "cuda:1" counts).
  std::map<std::string, std::vector<GlobalInfo>> global_infos;

  static constexpr auto declared_fields() {
    return std::make_tuple(field("functions", &IRModuleNode::functions),
                           field("const_name_to_constant", &IRModuleNode::const_name_to_constant),
                           field("attrs", &IRModuleNode::attrs),
                           field("global_infos", &IRModuleNode::global_infos));
  }
};

/// A handle to a module with copy-on-write mutation: methods that change the module copy the
/// node first when it is shared, so a module passed to a pass is never changed behind its back.
class IRModule : public Ref<IRModuleNode> {
 public:
  IRModule() = default;
  explicit IRModule(Ref<IRModuleNode> node) : Ref<IRModuleNode>(std::move(node)) {}
  static IRModule create() { return IRModule(make<IRModuleNode>()); }

  /// The GlobalVar named `name`; throws Error("KeyError") if there is none.
  GlobalVar get_global_var(const std::string& name) const;
  bool contains(const std::string& name) const;
  /// The function named `name` (or bound to `gv`); throws Error("KeyError") if absent.
  Expr lookup(const std::string& name) const;
  Expr lookup(const GlobalVar& gv) const { return lookup(gv->name_hint); }
  /// Functions in name order.
  std::vector<std::pair<GlobalVar, Expr>> functions() const;

  /// Adds (or replaces, when `replace`) a function under `gv`'s name.
  void add(const GlobalVar& gv, const Expr& func, bool replace = false);
  /// Replaces the function bound to an existing global.
  void update(const GlobalVar& gv, const Expr& func) { add(gv, func, true); }
  void remove(const std::string& name);
  /// A name not yet used in the module: `hint`, else `hint1`, `hint2`, ... (TVM's rule).
  std::string unique_global_name(const std::string& hint) const;

  /// The global infos named `name` (empty when there are none).
  const std::vector<GlobalInfo>& global_infos(const std::string& name) const;
  /// The module's virtual devices (global infos "vdevice").
  std::vector<VDevice> vdevices() const;
  /// Sets the global infos named `name` (TVM's update_global_info); an empty list removes them.
  void update_global_info(const std::string& name, std::vector<GlobalInfo> infos);

  /// Mutable access for passes (copies when shared).
  IRModuleNode* cow();
};

}  // namespace partita
