// The operator registry: definitions keyed by name, built once on first use (explicit family
// registration instead of static initializers, so order and linking never matter).
#include "partita/op/registry.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "infer_utils.h"
#include "partita/ir/op_interface.h"

namespace partita::op {
namespace {

struct Entry {
  OpDef def;
  Op op;  // interned: every call of the op shares this node
};

std::map<std::string, Entry>& table() {
  static std::map<std::string, Entry> t;
  return t;
}

// Lookups share it, register_op takes it alone: an operator registered while other threads
// compile must not move the map under their lookups. (The built-in operators are inserted
// inside ensure_init's call_once, which every lookup passes first.)
std::shared_mutex& table_mutex() {
  static std::shared_mutex m;
  return m;
}

// What the IR needs of `def` (ir/op_interface.h), read from the stored definition (map nodes
// never move).
OpInterface interface_of(const OpDef* def) {
  OpInterface iface;
  iface.infer_struct_info = [def](const CallNode& call) {
    if (!def->infer) throw_error("ValueError", def->name + ": has no struct-info inference");
    return def->infer(call);
  };
  size_t max_args = 0;
  for (const auto& a : def->args) {
    if (a.variadic) max_args = OpInterface::kVariadic;
    else if (max_args != OpInterface::kVariadic) ++max_args;
    if (!a.variadic && !a.optional) ++iface.min_args;
  }
  iface.max_args = max_args;
  iface.pure = def->pure;
  return iface;
}

void insert(OpDef def) {
  auto& t = table();
  if (t.count(def.name)) throw_error("ValueError", "operator '" + def.name + "' is already registered");
  if (def.script_name.empty()) {
    // "relax.nn.conv2d" -> "R.nn.conv2d"
    std::string n = def.name;
    if (n.rfind("relax.", 0) == 0) n = n.substr(6);
    def.script_name = "R." + n;
  }
  def.infer = detail::with_operand_vdevice(std::move(def.infer));  // results stay on their operands' device
  Op op = make<OpNode>(def.name);
  std::string name = def.name;
  auto it = t.emplace(name, Entry{std::move(def), std::move(op)}).first;
  try {
    register_op_interface(name, interface_of(&it->second.def));
  } catch (...) {
    t.erase(it);  // the name was given an interface outside the registry: refuse the operator
    throw;
  }
}

bool g_initializing = false;

void ensure_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_initializing = true;
    detail::register_binary_ops();
    detail::register_unary_ops();
    detail::register_reduction_ops();
    detail::register_manipulation_ops();
    detail::register_linear_algebra_ops();
    detail::register_nn_ops();
    detail::register_nn_conv_pool_ops();
    detail::register_nn_norm_ops();
    detail::register_creation_ops();
    detail::register_search_ops();
    detail::register_scatter_gather_ops();
    detail::register_flip_tile_ops();
    detail::register_triangular_cumsum_ops();
    detail::register_nn_conv_transpose_ops();
    detail::register_image_ops();
    detail::register_device_ops();
    detail::register_packed_call_ops();
    detail::register_nn_attention_ops();
    g_initializing = false;
  });
}

// Installed when the library loads, so the IR's lookups by name see every built-in operator
// whatever ran first (a constant-initialized pointer: no initialization order to get wrong).
[[maybe_unused]] const bool g_loader_installed = (set_op_interface_loader(&ensure_init), true);

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

const Entry& get_entry(const std::string& name) {
  ensure_init();
  std::shared_lock lock(table_mutex());
  auto& t = table();
  auto it = t.find(name);
  if (it != t.end()) return it->second;
  // Suggest close names: small edit distance, or the same last component ("relu" ~ "relax.nn.relu").
  std::vector<std::pair<size_t, std::string>> close;
  auto last = [](const std::string& s) { return s.substr(s.find_last_of('.') + 1); };
  for (const auto& [n, e] : t) {
    size_t d = edit_distance(name, n);
    if (last(n) == last(name)) d = 0;
    if (d <= 3) close.emplace_back(d, n);
  }
  std::sort(close.begin(), close.end());
  std::string msg = "unknown operator '" + name + "'";
  if (!close.empty()) {
    msg += "; did you mean ";
    for (size_t i = 0; i < close.size() && i < 3; ++i) msg += (i ? ", '" : "'") + close[i].second + "'";
    msg += "?";
  }
  throw_error("KeyError", msg);
}

const char* kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Bool: return "bool";
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "string";
    case AttrKind::DType: return "dtype";
    case AttrKind::IntList: return "list of int";
    case AttrKind::OptionalInt: return "int or None";
    case AttrKind::OptionalIntList: return "list of int or None";
    case AttrKind::IntOrIntList: return "int or list of int";
    case AttrKind::VDevice: return "a VDevice";
    case AttrKind::OptionalFloat: return "float or None";
    case AttrKind::OptionalString: return "string or None";
  }
  return "?";
}

/// `v` converted to `spec.kind`, or nullopt when it cannot be.
std::optional<AttrValue> convert(const AttrSpec& spec, const AttrValue& v) {
  const bool none = std::holds_alternative<std::monostate>(v);
  const int64_t* i = std::get_if<int64_t>(&v);
  const std::vector<int64_t>* list = std::get_if<std::vector<int64_t>>(&v);
  switch (spec.kind) {
    case AttrKind::Bool:
      if (std::holds_alternative<bool>(v)) return v;
      if (i && (*i == 0 || *i == 1)) return AttrValue(*i == 1);
      return std::nullopt;
    case AttrKind::Int:
      if (i) return v;
      // A whole double within int64's range (converting one outside it is undefined behaviour).
      if (const double* d = std::get_if<double>(&v);
          d && *d >= -0x1p63 && *d < 0x1p63 && *d == std::trunc(*d))
        return AttrValue(int64_t(*d));
      return std::nullopt;
    case AttrKind::Float:
      if (std::holds_alternative<double>(v)) return v;
      if (i) return AttrValue(double(*i));
      return std::nullopt;
    case AttrKind::String:
      if (std::holds_alternative<std::string>(v)) return v;
      return std::nullopt;
    case AttrKind::DType:
      if (std::holds_alternative<DataType>(v)) return v;
      if (none) return AttrValue(DataType::Void());
      if (const auto* s = std::get_if<std::string>(&v)) {
        if (!DataType::is_valid(*s)) return std::nullopt;
        return AttrValue(DataType::parse(*s));
      }
      return std::nullopt;
    case AttrKind::IntList:
      if (list) return v;
      if (i) return AttrValue(std::vector<int64_t>{*i});
      return std::nullopt;
    case AttrKind::OptionalInt:
      if (none || i) return v;
      return std::nullopt;
    case AttrKind::OptionalIntList:
      if (none || list) return v;
      if (i) return AttrValue(std::vector<int64_t>{*i});
      return std::nullopt;
    case AttrKind::IntOrIntList:
      if (i || list) return v;
      return std::nullopt;
    case AttrKind::VDevice:
      if (const VDevice* d = std::get_if<VDevice>(&v); d && *d) return v;
      return std::nullopt;
    case AttrKind::OptionalFloat:
      if (none || std::holds_alternative<double>(v)) return v;
      if (i) return AttrValue(double(*i));
      return std::nullopt;
    case AttrKind::OptionalString:
      if (none || std::holds_alternative<std::string>(v)) return v;
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

namespace detail {
void add_op(OpDef def) { insert(std::move(def)); }
}  // namespace detail

void register_op(OpDef def) {
  ensure_init();
  std::unique_lock lock(table_mutex());
  insert(std::move(def));
}

const OpDef* find_op_def(const std::string& name) {
  ensure_init();
  std::shared_lock lock(table_mutex());
  auto& t = table();
  auto it = t.find(name);
  return it == t.end() ? nullptr : &it->second.def;
}

const OpDef& get_op_def(const std::string& name) { return get_entry(name).def; }

Op get_op(const std::string& name) { return get_entry(name).op; }

std::vector<std::string> list_ops() {
  ensure_init();
  std::shared_lock lock(table_mutex());
  std::vector<std::string> names;
  for (const auto& [n, e] : table()) names.push_back(n);
  return names;  // std::map keeps them sorted
}

Call make_call(const std::string& op_name, std::vector<Expr> args,
               std::vector<std::pair<std::string, AttrValue>> attrs) {
  const Entry& entry = get_entry(op_name);
  const OpDef& def = entry.def;

  // Argument count.
  size_t min_args = 0, max_args = def.args.size();
  bool variadic = false;
  for (const auto& a : def.args) {
    if (a.variadic) variadic = true;
    else if (!a.optional) ++min_args;
  }
  if (args.size() < min_args || (!variadic && args.size() > max_args)) {
    std::string expected = std::to_string(min_args);
    if (variadic) expected = "at least " + expected;
    else if (max_args != min_args) expected += " to " + std::to_string(max_args);
    throw_error("TypeError", op_name + ": expects " + expected + " argument" +
                                 (max_args == 1 && !variadic ? "" : "s") + ", got " +
                                 std::to_string(args.size()));
  }
  for (size_t k = 0; k < args.size(); ++k) {
    if (!args[k]) {
      std::string an = k < def.args.size() ? def.args[k].name : "argument " + std::to_string(k);
      throw_error("ValueError", op_name + ": argument '" + an + "' is null");
    }
  }

  // Attributes: validate names and kinds, then lay them out in the schema's order.
  std::vector<std::optional<AttrValue>> slots(def.attrs.size());
  for (auto& [name, value] : attrs) {
    // (clang 14 cannot capture a structured binding)
    auto it = std::find_if(def.attrs.begin(), def.attrs.end(), [&n = name](const AttrSpec& s) { return s.name == n; });
    if (it == def.attrs.end()) {
      std::string valid;
      for (const auto& s : def.attrs) valid += (valid.empty() ? "" : ", ") + s.name;
      throw_error("ValueError", op_name + ": unknown attribute '" + name + "'; valid attributes: " +
                                    (valid.empty() ? "(none)" : valid));
    }
    size_t idx = size_t(it - def.attrs.begin());
    if (slots[idx]) throw_error("ValueError", op_name + ": attribute '" + name + "' given twice");
    auto converted = convert(*it, value);
    if (!converted)
      throw_error("TypeError", op_name + ": attribute '" + name + "' must be " + kind_name(it->kind));
    slots[idx] = std::move(*converted);
  }
  // As in TVM, an omitted out_layout follows the input layout (data_layout or layout).
  for (size_t k = 0; k < def.attrs.size(); ++k) {
    if (def.attrs[k].name != "out_layout" || slots[k]) continue;
    for (size_t j = 0; j < def.attrs.size(); ++j) {
      if ((def.attrs[j].name == "data_layout" || def.attrs[j].name == "layout") && slots[j]) slots[k] = slots[j];
    }
  }
  std::vector<std::pair<std::string, AttrValue>> values;
  for (size_t k = 0; k < def.attrs.size(); ++k) {
    const AttrSpec& s = def.attrs[k];
    if (!slots[k]) {
      if (s.required) throw_error("TypeError", op_name + ": missing required attribute '" + s.name + "'");
      slots[k] = s.default_value;
    }
    values.emplace_back(s.name, std::move(*slots[k]));
  }
  Attrs a;
  if (!def.attrs.empty()) a = make<AttrsNode>(def.attrs_type_key, std::move(values));
  return make<CallNode>(entry.op, std::move(args), std::move(a));
}

const char* fusion_kind_name(FusionKind kind) {
  switch (kind) {
    case FusionKind::ElementWise: return "elementwise";
    case FusionKind::Broadcast: return "broadcast";
    case FusionKind::Injective: return "injective";
    case FusionKind::CommReduce: return "comm_reduce";
    case FusionKind::OutEWiseFusable: return "out_elemwise_fusable";
    case FusionKind::Tuple: return "tuple";
    case FusionKind::Opaque: return "opaque";
    case FusionKind::Unset: return "unset";
  }
  return "?";
}

const OpDef* callee_op_def(const CallNode& call) {
  const auto* op = call.op ? call.op.as<OpNode>() : nullptr;
  return op ? find_op_def(op->name) : nullptr;
}

StructInfo infer_struct_info(const CallNode& call) {
  const auto* op = call.op.as<OpNode>();
  if (!op) throw_error("TypeError", "infer_struct_info: the callee is not an operator");
  const OpDef& def = get_op_def(op->name);
  if (!def.infer) throw_error("ValueError", op->name + ": has no struct-info inference");
  return def.infer(call);
}

}  // namespace partita::op
