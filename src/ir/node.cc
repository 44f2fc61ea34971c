// Small out-of-line pieces of the node definitions.
#include "partita/ir/dispatch.h"
#include "partita/support/error.h"

namespace partita {

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
#define PARTITA_X(name) \
  case NodeKind::name:  \
    return #name;
    PARTITA_FOR_EACH_NODE(PARTITA_X)
#undef PARTITA_X
  }
  return "?";
}

const AttrValue* AttrsNode::find(const std::string& name) const {
  for (const auto& [k, v] : values)
    if (k == name) return &v;
  return nullptr;
}

void throw_attr_error(const std::string& owner, const std::string& name, const std::string& what) {
  throw_error("AttributeError", owner + ": attribute \"" + name + "\" " + what);
}

std::optional<std::string> FunctionNode::attr_string(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return std::nullopt;
}

const Expr& binding_value(const BindingNode& b) {
  if (const auto* vb = b.kind() == NodeKind::VarBinding ? static_cast<const VarBindingNode*>(&b) : nullptr)
    return vb->value;
  return static_cast<const MatchCastNode&>(b).value;
}

StructInfo object_sinfo() { return make<ObjectStructInfoNode>(); }
StructInfo tensor_sinfo(std::vector<PrimExpr> shape, DataType dtype) {
  return make<TensorStructInfoNode>(std::move(shape), dtype);
}
StructInfo tensor_sinfo(std::vector<int64_t> shape, DataType dtype) {
  std::vector<PrimExpr> dims;
  dims.reserve(shape.size());
  for (int64_t d : shape) dims.push_back(int_imm(d));
  return tensor_sinfo(std::move(dims), dtype);
}
StructInfo tensor_sinfo_ndim(DataType dtype, int ndim) { return make<TensorStructInfoNode>(dtype, ndim); }
StructInfo tuple_sinfo(std::vector<StructInfo> fields) { return make<TupleStructInfoNode>(std::move(fields)); }
StructInfo shape_sinfo(std::vector<PrimExpr> values) { return make<ShapeStructInfoNode>(std::move(values)); }
StructInfo prim_sinfo(DataType dtype, PrimExpr value) { return make<PrimStructInfoNode>(dtype, std::move(value)); }
StructInfo tensor_sinfo_on(const TensorStructInfoNode& sinfo, VDevice vdevice) {
  if (sinfo.shape) return make<TensorStructInfoNode>(*sinfo.shape, sinfo.dtype, std::move(vdevice));
  return make<TensorStructInfoNode>(sinfo.dtype, sinfo.ndim, std::move(vdevice));
}

std::optional<std::vector<int64_t>> static_shape(const StructInfo& sinfo) {
  const auto* t = sinfo.as<TensorStructInfoNode>();
  if (!t || !t->shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : *t->shape) {
    auto c = as_const_int(d);
    if (!c) return std::nullopt;
    dims.push_back(*c);
  }
  return dims;
}

// ---- IRModule ----

GlobalVar IRModule::get_global_var(const std::string& name) const {
  auto it = get()->functions.find(name);
  if (it == get()->functions.end()) throw_error("KeyError", "module has no function named \"" + name + "\"");
  return it->second.first;
}

bool IRModule::contains(const std::string& name) const { return get()->functions.count(name) != 0; }

Expr IRModule::lookup(const std::string& name) const {
  auto it = get()->functions.find(name);
  if (it == get()->functions.end()) throw_error("KeyError", "module has no function named \"" + name + "\"");
  return it->second.second;
}

std::vector<std::pair<GlobalVar, Expr>> IRModule::functions() const {
  std::vector<std::pair<GlobalVar, Expr>> out;
  for (const auto& [name, entry] : get()->functions) out.push_back(entry);
  return out;
}

IRModuleNode* IRModule::cow() {
  if (!defined()) *this = create();
  if (get()->use_count() > 1) *this = IRModule(Ref<IRModuleNode>(new IRModuleNode(*get())));
  return const_cast<IRModuleNode*>(get());
}

void IRModule::add(const GlobalVar& gv, const Expr& func, bool replace) {
  if (!replace && contains(gv->name_hint))
    throw_error("ValueError", "module already has a function named \"" + gv->name_hint + "\"");
  cow()->functions[gv->name_hint] = {gv, func};
}

void IRModule::remove(const std::string& name) { cow()->functions.erase(name); }

const std::vector<GlobalInfo>& IRModule::global_infos(const std::string& name) const {
  static const std::vector<GlobalInfo> kNone;
  if (!defined()) return kNone;
  auto it = get()->global_infos.find(name);
  return it == get()->global_infos.end() ? kNone : it->second;
}

std::vector<VDevice> IRModule::vdevices() const {
  std::vector<VDevice> out;
  for (const GlobalInfo& info : global_infos("vdevice"))
    if (auto v = info.as_ref<VDeviceNode>()) out.push_back(v);
  return out;
}

void IRModule::update_global_info(const std::string& name, std::vector<GlobalInfo> infos) {
  for (const GlobalInfo& info : infos)
    if (!info) throw_error("ValueError", "update_global_info(\"" + name + "\"): an entry is null");
  if (name == "vdevice")
    for (const GlobalInfo& info : infos)
      if (!info.as<VDeviceNode>())
        throw_error("TypeError", std::string("update_global_info(\"vdevice\"): every entry must be a VDevice, not ") +
                                     node_kind_name(info->kind()));
  if (infos.empty()) cow()->global_infos.erase(name);
  else cow()->global_infos[name] = std::move(infos);
}

std::string IRModule::unique_global_name(const std::string& hint) const {
  if (!defined() || !contains(hint)) return hint;
  for (int i = 1;; ++i) {
    std::string candidate = hint + std::to_string(i);
    if (!contains(candidate)) return candidate;
  }
}

}  // namespace partita
