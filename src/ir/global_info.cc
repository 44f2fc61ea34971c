// Targets as IR data and virtual devices: TVM's per-kind defaults, the string and dictionary
// forms of a target, and how TVMScript names a vdevice ("cuda:0:global").
#include "partita/ir/global_info.h"

#include <algorithm>
#include <charconv>

#include "partita/ir/structural_equal.h"
#include "partita/support/error.h"

namespace partita {
namespace {

/// What TVM registers for a target kind: its device type, default keys and the attributes that
/// have a default value (machine-detected ones excepted).
struct KindInfo {
  int device_type;
  std::vector<std::string> keys;
  TargetConfig defaults;
};

const std::map<std::string, KindInfo>& kinds() {
  static const std::map<std::string, KindInfo> table = [] {
    using C = TargetConfig;
    std::map<std::string, KindInfo> t;
    t["llvm"] = {1, {"cpu"}, {}};
    t["c"] = {1, {"cpu"}, {}};
    t["cuda"] = {2, {"cuda", "gpu"}, C{{"max_num_threads", int64_t(1024)}, {"thread_warp_size", int64_t(32)}}};
    t["nvptx"] = {2, {"cuda", "gpu"}, C{{"max_num_threads", int64_t(1024)}, {"thread_warp_size", int64_t(32)}}};
    t["opencl"] = {4,
                   {"opencl", "gpu"},
                   C{{"image_base_address_alignment", int64_t(64)},
                     {"max_function_args", int64_t(128)},
                     {"max_num_threads", int64_t(256)},
                     {"max_shared_memory_per_block", int64_t(16384)},
                     {"max_threads_per_block", int64_t(256)},
                     {"texture_depth_limit", int64_t(2048)},
                     {"texture_spatial_limit", int64_t(16384)},
                     {"thread_warp_size", int64_t(1)}}};
    t["vulkan"] = {7,
                   {"vulkan", "gpu"},
                   C{{"max_num_threads", int64_t(256)},
                     {"max_threads_per_block", int64_t(256)},
                     {"supports_float32", true},
                     {"supports_int32", true},
                     {"thread_warp_size", int64_t(1)}}};
    t["metal"] = {8,
                  {"metal", "gpu"},
                  C{{"max_function_args", int64_t(31)},
                    {"max_num_threads", int64_t(256)},
                    {"max_shared_memory_per_block", int64_t(32768)},
                    {"max_threads_per_block", int64_t(256)},
                    {"thread_warp_size", int64_t(16)}}};
    t["rocm"] = {10,
                 {"rocm", "gpu"},
                 C{{"max_num_threads", int64_t(256)},
                   {"max_shared_memory_per_block", int64_t(65536)},
                   {"max_threads_per_block", int64_t(256)},
                   {"thread_warp_size", int64_t(64)}}};
    t["ext_dev"] = {12, {}, {}};
    t["webgpu"] = {15,
                   {"webgpu", "gpu"},
                   C{{"max_num_threads", int64_t(256)},
                     {"max_shared_memory_per_block", int64_t(32768)},
                     {"supports_subgroups", false},
                     {"thread_warp_size", int64_t(1)}}};
    t["hexagon"] = {16, {"hexagon", "cpu"}, {}};
    return t;
  }();
  return table;
}

const KindInfo& kind_info(const std::string& kind) {
  auto it = kinds().find(kind);
  if (it != kinds().end()) return it->second;
  std::string known;
  for (const auto& [k, v] : kinds()) known += (known.empty() ? "" : ", ") + k;
  throw_error("ValueError", "unknown target kind '" + kind + "' (known kinds: " + known + ")");
}

const char* value_type_name(const TargetAttrValue& v) {
  switch (v.index()) {
    case 0: return "a bool";
    case 1: return "an integer";
    case 2: return "a float";
    case 3: return "a string";
    case 4: return "a list of strings";
    default: return "a list of integers";
  }
}

const std::string* as_string(const TargetAttrValue& v) { return std::get_if<std::string>(&v); }

struct DeviceName {
  const char* name;
  int type;
};
// TVM's runtime device names (tvm_ffi.Device), in device-type order; aliases after.
constexpr DeviceName kDeviceNames[] = {
    {"cpu", 1},      {"cuda", 2},      {"cuda_host", 3}, {"opencl", 4},        {"vulkan", 7},
    {"metal", 8},    {"vpi", 9},       {"rocm", 10},     {"rocm_host", 11},    {"ext_dev", 12},
    {"cuda_managed", 13}, {"oneapi", 14}, {"webgpu", 15}, {"hexagon", 16},     {"maia", 17},
    {"trn", 18},     {"mps", 8},       {"wgpu", 15},
};

std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto r = std::from_chars(b, e, v);
  if (s.empty() || r.ec != std::errc() || r.ptr != e) return std::nullopt;
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

}  // namespace

std::vector<std::string> known_target_kinds() {
  std::vector<std::string> out;
  for (const auto& [k, v] : kinds()) out.push_back(k);
  return out;
}

TargetDesc make_target(const TargetConfig& config, TargetDesc host) {
  auto kind_it = config.find("kind");
  if (kind_it == config.end())
    throw_error("ValueError", "target: the dictionary has no \"kind\" entry");
  const std::string* kind = as_string(kind_it->second);
  if (!kind) throw_error("ValueError", std::string("target: \"kind\" must be a string, not ") +
                                           value_type_name(kind_it->second));
  const KindInfo& info = kind_info(*kind);
  std::string tag;
  std::vector<std::string> keys;
  bool has_keys = false;
  TargetConfig attrs;
  for (const auto& [name, value] : config) {
    if (name == "kind") continue;
    if (name == "tag") {
      const std::string* s = as_string(value);
      if (!s) throw_error("ValueError", std::string("target: \"tag\" must be a string, not ") + value_type_name(value));
      tag = *s;
    } else if (name == "keys") {
      const auto* list = std::get_if<std::vector<std::string>>(&value);
      if (!list) throw_error("ValueError", std::string("target: \"keys\" must be a list of strings, not ") +
                                               value_type_name(value));
      keys = *list;
      has_keys = true;
    } else if (name == "host") {
      const std::string* s = as_string(value);
      if (!s) throw_error("ValueError", "target: \"host\" must be a target dictionary or a kind string");
      if (host) throw_error("ValueError", "target: the host is given twice");
      host = make_target(*s);
    } else {
      auto d = info.defaults.find(name);
      if (d != info.defaults.end() && d->second.index() != value.index())
        throw_error("ValueError", "target '" + *kind + "': attribute \"" + name + "\" must be " +
                                      value_type_name(d->second) + ", not " + value_type_name(value));
      attrs[name] = value;
    }
  }
  // As TVM: a "device" attribute is one more key; the kind's keys apply when none are given.
  if (auto dev = attrs.find("device"); dev != attrs.end())
    if (const std::string* s = as_string(dev->second)) keys.push_back(*s);
  if (!has_keys) keys.insert(keys.end(), info.keys.begin(), info.keys.end());
  std::vector<std::string> unique;
  for (const auto& k : keys)
    if (std::find(unique.begin(), unique.end(), k) == unique.end()) unique.push_back(k);
  for (const auto& [name, value] : info.defaults) attrs.emplace(name, value);
  return make<TargetDescNode>(*kind, std::move(tag), std::move(unique), std::move(attrs), std::move(host));
}

TargetDesc make_target(const std::string& text) {
  std::vector<std::string> words;
  for (const auto& w : split(text, ' '))
    if (!w.empty()) words.push_back(w);
  if (words.empty()) throw_error("ValueError", "target: the target string is empty");
  TargetConfig config{{"kind", words[0]}};
  static const char* const kListOptions[] = {"keys", "mattr", "libs", "cl-opt"};
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    size_t dashes = w.rfind("--", 0) == 0 ? 2 : w.rfind('-', 0) == 0 ? 1 : 0;
    if (dashes == 0 || w.size() == dashes)
      throw_error("ValueError", "target '" + text + "': option '" + w + "' must be written -name=value");
    size_t eq = w.find('=');
    std::string name = w.substr(dashes, eq == std::string::npos ? std::string::npos : eq - dashes);
    if (name.empty()) throw_error("ValueError", "target '" + text + "': option '" + w + "' has no name");
    if (eq == std::string::npos) {
      config[name] = true;  // a bare flag
      continue;
    }
    std::string value = w.substr(eq + 1);
    bool is_list = std::any_of(std::begin(kListOptions), std::end(kListOptions),
                               [&](const char* l) { return name == l; });
    if (is_list) config[name] = split(value, ',');
    else if (auto i = parse_int(value)) config[name] = *i;
    else if (value == "true" || value == "false") config[name] = value == "true";
    else config[name] = value;
  }
  return make_target(config);
}

TargetConfig target_to_config(const TargetDescNode& target) {
  TargetConfig out = target.attrs;
  out["kind"] = target.kind;
  out["tag"] = target.tag;
  out["keys"] = target.keys;
  return out;
}

int target_device_type(const TargetDescNode& target) {
  auto it = target.attrs.find("target_device_type");
  if (it != target.attrs.end())
    if (const auto* v = std::get_if<int64_t>(&it->second)) return int(*v);
  return kind_info(target.kind).device_type;
}

std::optional<int> device_type_from_name(const std::string& name) {
  for (const auto& d : kDeviceNames)
    if (name == d.name) return d.type;
  return std::nullopt;
}

std::string device_type_name(int device_type) {
  for (const auto& d : kDeviceNames)
    if (d.type == device_type) return d.name;
  return "device" + std::to_string(device_type);
}

VDevice make_vdevice(const std::string& target, int vdevice_id, std::string memory_scope) {
  return make<VDeviceNode>(make_target(target), vdevice_id, std::move(memory_scope));
}

bool same_vdevice(const VDevice& a, const VDevice& b) {
  if (a.get() == b.get()) return true;
  if (!a || !b) return false;
  return structural_equal(a, b);
}

std::string vdevice_script_name(const VDevice& vdevice, const std::vector<GlobalInfo>& vdevices) {
  auto index_of = [&](auto matches) -> int {
    int kind_index = 0;
    for (const GlobalInfo& info : vdevices) {
      const auto* v = info.as<VDeviceNode>();
      if (!v) continue;
      if (matches(v)) return kind_index;
      if (v->target && vdevice->target && v->target->kind == vdevice->target->kind) ++kind_index;
    }
    return -1;
  };
  int index = index_of([&](const VDeviceNode* v) { return v == vdevice.get(); });
  if (index < 0) index = index_of([&](const VDeviceNode* v) { return same_vdevice(VDevice(v), vdevice); });
  std::string kind = vdevice->target ? vdevice->target->kind : "";
  return kind + ":" + std::to_string(index) + ":" + vdevice->memory_scope;
}

VDevice lookup_vdevice(const std::string& name, const std::vector<GlobalInfo>& vdevices) {
  std::vector<std::string> parts = split(name, ':');
  if (parts.size() > 3) {  // a memory scope may itself contain ':'
    for (size_t i = 3; i < parts.size(); ++i) parts[2] += ":" + parts[i];
    parts.resize(3);
  }
  const std::string& kind = parts[0];
  if (kind.empty()) throw_error("ValueError", "vdevice \"" + name + "\": the target kind is empty");
  int64_t index = 0;
  if (parts.size() >= 2) {
    auto i = parse_int(parts[1]);
    if (!i || *i < 0)
      throw_error("ValueError", "vdevice \"" + name + "\": '" + parts[1] + "' is not a device index (0, 1, ...)");
    index = *i;
  }
  if (vdevices.empty())
    throw_error("ValueError", "vdevice \"" + name + "\": the module declares no vdevices "
                              "(I.module_global_infos({\"vdevice\": [...]}) before the functions)");
  const VDeviceNode* found = nullptr;
  if (kind == "vdevice") {
    if (size_t(index) < vdevices.size()) found = vdevices[size_t(index)].as<VDeviceNode>();
  } else {
    int64_t count = 0;
    for (const GlobalInfo& info : vdevices) {
      const auto* v = info.as<VDeviceNode>();
      if (!v || !v->target || v->target->kind != kind) continue;
      if (count++ == index) {
        found = v;
        break;
      }
    }
  }
  if (!found) {
    std::string listed;
    for (const GlobalInfo& info : vdevices)
      if (const auto* v = info.as<VDeviceNode>())
        listed += (listed.empty() ? "" : ", ") + vdevice_script_name(VDevice(v), vdevices);
    throw_error("ValueError", "vdevice \"" + name + "\" is not among the module's vdevices (" + listed + ")");
  }
  if (parts.size() == 3 && parts[2] != found->memory_scope)
    throw_error("ValueError", "vdevice \"" + name + "\": that device has memory scope \"" +
                                  found->memory_scope + "\", not \"" + parts[2] + "\"");
  return VDevice(found);
}

}  // namespace partita
