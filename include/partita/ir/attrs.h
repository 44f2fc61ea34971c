// Attribute values: operator attributes on calls (ordered, schema from the op registry) and
// function attributes ("Composite", "Codegen", "global_symbol", "Primitive", ...).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "partita/ir/fields.h"
#include "partita/ir/global_info.h"
#include "partita/ir/object.h"
#include "partita/runtime/data_type.h"

namespace partita {

/// None, a bool, an integer, a float, a string, a dtype, a list of integers, or a virtual
/// device (R.to_vdevice's dst_vdevice, as TVM's ToVDeviceAttrs holds a VDevice).
using AttrValue = std::variant<std::monostate, bool, int64_t, double, std::string, DataType,
                               std::vector<int64_t>, VDevice>;

/// Operator attributes: an ordered list of named values. `type_key` names the schema
/// (e.g. "relax.attrs.Conv2DAttrs"); the op registry says which names and defaults it has.
class AttrsNode : public Object {
 public:
  PARTITA_NODE(Attrs)
  AttrsNode(std::string type_key, std::vector<std::pair<std::string, AttrValue>> values)
      : Object(kKind), type_key(std::move(type_key)), values(std::move(values)) {}
  std::string type_key;
  std::vector<std::pair<std::string, AttrValue>> values;

  /// The value named `name`, or nullptr.
  const AttrValue* find(const std::string& name) const;
  /// The value named `name`; throws Error("AttributeError") when absent or of another type.
  template <class V>
  const V& get(const std::string& name) const;

  static constexpr auto declared_fields() {
    return std::make_tuple(field("type_key", &AttrsNode::type_key), field("values", &AttrsNode::values));
  }
};
using Attrs = Ref<AttrsNode>;

/// Function attributes, kept sorted by key so printing and hashing are deterministic.
using DictAttrs = std::map<std::string, AttrValue>;

/// Throws Error("AttributeError") naming `owner` and `name`.
[[noreturn]] void throw_attr_error(const std::string& owner, const std::string& name, const std::string& what);

template <class V>
const V& AttrsNode::get(const std::string& name) const {
  const AttrValue* v = find(name);
  if (!v) throw_attr_error(type_key, name, "is missing");
  if (const V* p = std::get_if<V>(v)) return *p;
  throw_attr_error(type_key, name, "has another type");
}

}  // namespace partita
