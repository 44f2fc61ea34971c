// Module-level global infos (TVM's GlobalInfo): static objects the IR refers to, kept in
// IRModule::global_infos under a name. The one kind today is the virtual device, VDevice
// ("vdevice": [...]), which tensor struct info and R.to_vdevice point at.
//
// A VDevice names a compilation target. The IR cannot depend on codegen's Target (codegen sits
// below the IR), so the target is held here as plain data, TargetDesc: TVM's Target reduced to
// what it exports — kind, tag, keys, attributes (and an optional host) — with TVM's per-kind
// default keys and default attributes filled in at construction, so `I.vdevice("cuda")` prints
// the same dictionary TVM prints, and parsing that dictionary back gives an equal TargetDesc.
// Options are checked against each kind's option list and types as TVM declares them;
// attributes TVM detects from the machine (cuda's "arch", llvm's "mtriple") are present only
// when given.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "partita/ir/fields.h"
#include "partita/ir/object.h"

namespace partita {

/// A target attribute value: a bool, an integer, a string or a list of strings (the value types
/// TVM's target options take).
using TargetAttrValue = std::variant<bool, int64_t, std::string, std::vector<std::string>>;

class TargetDescNode : public Object {
 public:
  PARTITA_NODE(TargetDesc)
  TargetDescNode(std::string kind, std::string tag, std::vector<std::string> keys,
                 std::map<std::string, TargetAttrValue> attrs, Ref<TargetDescNode> host = {})
      : Object(kKind),
        kind(std::move(kind)),
        tag(std::move(tag)),
        keys(std::move(keys)),
        attrs(std::move(attrs)),
        host(std::move(host)) {}
  std::string kind;                              // "llvm", "cuda", ...
  std::string tag;                               // "" unless given
  std::vector<std::string> keys;                 // e.g. ["cuda", "gpu"]
  std::map<std::string, TargetAttrValue> attrs;  // sorted: printing and hashing are stable
  Ref<TargetDescNode> host;                      // may be null

  static constexpr auto declared_fields() {
    return std::make_tuple(field("kind", &TargetDescNode::kind), field("tag", &TargetDescNode::tag),
                           field("keys", &TargetDescNode::keys),
                           field("attrs", &TargetDescNode::attrs),
                           field("host", &TargetDescNode::host));
  }
};
using TargetDesc = Ref<TargetDescNode>;

/// A target dictionary (without "host", which nests and is passed on its own).
using TargetConfig = std::map<std::string, TargetAttrValue>;

/// Target kinds the IR knows (TVM's device target kinds), sorted.
std::vector<std::string> known_target_kinds();

/// A target from a dictionary as TVM's Target(config) reads it: "kind" (required), "tag",
/// "keys" (else the kind's default keys; a "device" attribute is added to them), every other
/// entry an attribute; the kind's default attributes fill what is not given. `host` is the
/// target's host (a "host" entry holding a kind string is accepted too). Throws
/// Error("ValueError") for an unknown kind (listing the known ones), a missing kind, an option
/// the kind does not take (listing those it does) or a value of the wrong type, naming the entry.
TargetDesc make_target(const TargetConfig& config, TargetDesc host = {});
/// A target from a string: the kind alone ("cuda"), as current TVM takes it, or TVM's older
/// command-line form with options ("cuda -arch=sm_80 -max_num_threads=512", "llvm
/// -mattr=+avx2,+fma -fast-math"), each value read as its option's type (a list option is
/// comma-separated; a bare flag is true). Throws Error("ValueError") naming a malformed option.
TargetDesc make_target(const std::string& text);

/// The dictionary TVM's Target.ToConfig() exports, less "host": kind, tag, keys and every
/// attribute. Printed sorted by key (with "host" nested when set) it is TVM's text.
TargetConfig target_to_config(const TargetDescNode& target);

/// DLPack device type of a target: its "target_device_type" attribute, else its kind's
/// (kDLCPU = 1 for llvm and c, kDLCUDA = 2 for cuda, ...), as TVM's GetTargetDeviceType().
int target_device_type(const TargetDescNode& target);

/// DLPack device type of a device name as TVM's runtime spells it ("cpu" 1, "cuda" 2, "opencl" 4,
/// "vulkan" 7, "metal" 8, "rocm" 10, ...), or nullopt when unknown.
std::optional<int> device_type_from_name(const std::string& name);
/// The name of a DLPack device type ("cpu", "cuda", ...), or "device<N>" when unknown.
std::string device_type_name(int device_type);

/// Base of the module's global infos.
class GlobalInfoNode : public Object {
 public:
  using Object::Object;
  static bool classof(NodeKind k) { return k == NodeKind::VDevice; }
};
using GlobalInfo = Ref<GlobalInfoNode>;

/// A virtual device (TVM's VDevice): the target that compiles for it, which device of that
/// target (several GPUs share one target), and the memory scope ("global" by default).
class VDeviceNode : public GlobalInfoNode {
 public:
  PARTITA_NODE(VDevice)
  explicit VDeviceNode(TargetDesc target, int vdevice_id = 0, std::string memory_scope = "global")
      : GlobalInfoNode(kKind),
        target(std::move(target)),
        vdevice_id(vdevice_id),
        memory_scope(std::move(memory_scope)) {}
  TargetDesc target;
  int vdevice_id;
  std::string memory_scope;

  static constexpr auto declared_fields() {
    return std::make_tuple(field("target", &VDeviceNode::target),
                           field("vdevice_id", &VDeviceNode::vdevice_id),
                           field("memory_scope", &VDeviceNode::memory_scope));
  }
};
using VDevice = Ref<VDeviceNode>;

/// A VDevice of `target` ("cuda", "llvm -mcpu=skylake"); throws like make_target.
VDevice make_vdevice(const std::string& target, int vdevice_id = 0,
                     std::string memory_scope = "global");

/// Whether two vdevices describe the same device: equal targets, ids and memory scopes. TVM
/// compares VDevice objects by identity in several places (its printer, struct-info unification);
/// Partita compares them structurally there, which agrees whenever both come from the module's
/// "vdevice" list and keeps separately built but equal vdevices interchangeable.
bool same_vdevice(const VDevice& a, const VDevice& b);

/// "kind:index:scope" for `vdevice` within `vdevices` (TVM's spelling since 0.23): index counts
/// the earlier vdevices of the same target kind; -1 when `vdevice` is not in the list (TVM prints
/// "cuda:-1:global" then, too). Found by identity first, else by same_vdevice.
std::string vdevice_script_name(const VDevice& vdevice, const std::vector<GlobalInfo>& vdevices);

/// The vdevice that a TVMScript annotation names within `vdevices`: "kind" (the first of that
/// kind), "kind:index" (the index-th of that kind), "kind:index:scope" (which must then have
/// that memory scope) or "vdevice:index" (the index-th of the whole list), as TVM's parser reads
/// it. Throws Error("ValueError") explaining what is missing (no list, no such device, a
/// different scope, a malformed name).
VDevice lookup_vdevice(const std::string& name, const std::vector<GlobalInfo>& vdevices);

}  // namespace partita
