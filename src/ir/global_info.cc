// Targets as IR data and virtual devices: TVM's per-kind defaults, the string and dictionary
// forms of a target, and how TVMScript names a vdevice ("cuda:0:global").
#include "partita/ir/global_info.h"

#include <algorithm>
#include <charconv>

#include "partita/ir/structural_equal.h"
#include "partita/support/error.h"

namespace partita {
namespace {

/// What TVM registers for a target kind: its device type, default keys, the options it takes
/// ("name:type" words; s string, i integer, b bool, l list of strings) and the attributes that
/// have a default value (machine-detected ones excepted).
struct KindInfo {
  int device_type;
  std::vector<std::string> keys;
  std::map<std::string, char> options;
  TargetConfig defaults;
};

// Options every kind takes ("host" and "from_device" are handled apart).
constexpr const char* kCommonOptions = "keys:l tag:s device:s model:s libs:l target_device_type:i";

std::map<std::string, char> parse_options(const std::string& words) {
  std::map<std::string, char> out;
  size_t i = 0;
  while (i < words.size()) {
    size_t end = words.find(' ', i);
    if (end == std::string::npos) end = words.size();
    std::string w = words.substr(i, end - i);
    if (!w.empty()) out[w.substr(0, w.size() - 2)] = w.back();
    i = end + 1;
  }
  return out;
}

const std::map<std::string, KindInfo>& kinds() {
  static const std::map<std::string, KindInfo> table = [] {
    using C = TargetConfig;
    std::map<std::string, KindInfo> t;
    auto add = [&](const char* name, int type, std::vector<std::string> keys,
                   const std::string& options, C defaults) {
      t[name] = {type, std::move(keys), parse_options(std::string(kCommonOptions) + " " + options),
                 std::move(defaults)};
    };
    const std::string gpu =
        "max_num_threads:i max_threads_per_block:i max_shared_memory_per_block:i "
        "thread_warp_size:i ";
    add("llvm", 1, {"cpu"},
        "mattr:l mcpu:s mtriple:s mfloat-abi:s mabi:s num-cores:i opt-level:i cl-opt:l jit:s "
        "vector-width:i fast-math:b fast-math-nnan:b fast-math-ninf:b fast-math-nsz:b "
        "fast-math-arcp:b fast-math-contract:b fast-math-reassoc:b",
        {});
    add("c", 1, {"cpu"}, "mcpu:s march:s workspace-byte-alignment:i constants-byte-alignment:i",
        {});
    add("cuda", 2, {"cuda", "gpu"},
        gpu + "mcpu:s arch:s registers_per_block:i l2_cache_size_bytes:i",
        C{{"max_num_threads", int64_t(1024)}, {"thread_warp_size", int64_t(32)}});
    add("nvptx", 2, {"cuda", "gpu"}, "mcpu:s mtriple:s max_num_threads:i thread_warp_size:i",
        C{{"max_num_threads", int64_t(1024)}, {"thread_warp_size", int64_t(32)}});
    add("opencl", 4, {"opencl", "gpu"},
        gpu +
            "texture_spatial_limit:i texture_depth_limit:i max_function_args:i "
            "image_base_address_alignment:i",
        C{{"image_base_address_alignment", int64_t(64)},
          {"max_function_args", int64_t(128)},
          {"max_num_threads", int64_t(256)},
          {"max_shared_memory_per_block", int64_t(16384)},
          {"max_threads_per_block", int64_t(256)},
          {"texture_depth_limit", int64_t(2048)},
          {"texture_spatial_limit", int64_t(16384)},
          {"thread_warp_size", int64_t(1)}});
    add("vulkan", 7, {"vulkan", "gpu"},
        gpu +
            "mattr:l supports_float16:b supports_float32:b supports_float64:b supports_int8:b "
            "supports_int16:b "
            "supports_int32:b supports_int64:b supports_8bit_buffer:b supports_16bit_buffer:b "
            "supports_storage_buffer_storage_class:b supports_push_descriptor:b "
            "supports_dedicated_allocation:b "
            "supports_integer_dot_product:b supports_cooperative_matrix:b "
            "supported_subgroup_operations:i "
            "max_block_size_x:i max_block_size_y:i max_block_size_z:i max_push_constants_size:i "
            "max_uniform_buffer_range:i max_storage_buffer_range:i "
            "max_per_stage_descriptor_storage_buffer:i "
            "device_type:s device_name:s driver_name:s driver_version:i vulkan_api_version:i "
            "max_spirv_version:i",
        C{{"max_num_threads", int64_t(256)},
          {"max_threads_per_block", int64_t(256)},
          {"supports_float32", true},
          {"supports_int32", true},
          {"thread_warp_size", int64_t(1)}});
    add("metal", 8, {"metal", "gpu"}, gpu + "max_function_args:i",
        C{{"max_function_args", int64_t(31)},
          {"max_num_threads", int64_t(256)},
          {"max_shared_memory_per_block", int64_t(32768)},
          {"max_threads_per_block", int64_t(256)},
          {"thread_warp_size", int64_t(16)}});
    add("rocm", 10, {"rocm", "gpu"}, gpu + "mcpu:s mtriple:s mattr:l",
        C{{"max_num_threads", int64_t(256)},
          {"max_shared_memory_per_block", int64_t(65536)},
          {"max_threads_per_block", int64_t(256)},
          {"thread_warp_size", int64_t(64)}});
    add("ext_dev", 12, {}, "", {});
    add("webgpu", 15, {"webgpu", "gpu"},
        "max_num_threads:i max_shared_memory_per_block:i supports_subgroups:b thread_warp_size:i",
        C{{"max_num_threads", int64_t(256)},
          {"max_shared_memory_per_block", int64_t(32768)},
          {"supports_subgroups", false},
          {"thread_warp_size", int64_t(1)}});
    add("hexagon", 16, {"hexagon", "cpu"},
        "mattr:l mcpu:s mtriple:s llvm-options:l num-cores:i vtcm-capacity:i", {});
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

const char* option_type_name(char type) {
  switch (type) {
    case 's':
      return "a string";
    case 'i':
      return "an integer";
    case 'b':
      return "a bool";
    default:
      return "a list of strings";
  }
}

bool has_type(const TargetAttrValue& v, char type) {
  switch (type) {
    case 's':
      return std::holds_alternative<std::string>(v);
    case 'i':
      return std::holds_alternative<int64_t>(v);
    case 'b':
      return std::holds_alternative<bool>(v);
    default:
      return std::holds_alternative<std::vector<std::string>>(v);
  }
}

const char* value_type_name(const TargetAttrValue& v) {
  switch (v.index()) {
    case 0:
      return "a bool";
    case 1:
      return "an integer";
    case 2:
      return "a string";
    default:
      return "a list of strings";
  }
}

const std::string* as_string(const TargetAttrValue& v) { return std::get_if<std::string>(&v); }

struct DeviceName {
  const char* name;
  int type;
};
// TVM's runtime device names (tvm_ffi.Device), in device-type order; aliases after.
constexpr DeviceName kDeviceNames[] = {
    {"cpu", 1},           {"cuda", 2},    {"cuda_host", 3}, {"opencl", 4},     {"vulkan", 7},
    {"metal", 8},         {"vpi", 9},     {"rocm", 10},     {"rocm_host", 11}, {"ext_dev", 12},
    {"cuda_managed", 13}, {"oneapi", 14}, {"webgpu", 15},   {"hexagon", 16},   {"maia", 17},
    {"trn", 18},          {"mps", 8},     {"wgpu", 15},
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
  if (!kind)
    throw_error("ValueError", std::string("target: \"kind\" must be a string, not ") +
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
      if (!s)
        throw_error("ValueError",
                    std::string("target: \"tag\" must be a string, not ") + value_type_name(value));
      tag = *s;
    } else if (name == "keys") {
      const auto* list = std::get_if<std::vector<std::string>>(&value);
      if (!list)
        throw_error("ValueError", std::string("target: \"keys\" must be a list of strings, not ") +
                                      value_type_name(value));
      keys = *list;
      has_keys = true;
    } else if (name == "host") {
      const std::string* s = as_string(value);
      if (!s)
        throw_error("ValueError", "target: \"host\" must be a target dictionary or a kind string");
      if (host) throw_error("ValueError", "target: the host is given twice");
      host = make_target(*s);
    } else if (name == "from_device") {
      throw_error("ValueError",
                  "target '" + *kind +
                      "': \"from_device\" (query a device for its attributes) is not "
                      "supported: the IR does not look at devices; give the attributes");
    } else {
      // TVM's schema: only the kind's options, each of its declared type.
      auto opt = info.options.find(name);
      if (opt == info.options.end()) {
        std::string known;
        for (const auto& [o, type] : info.options) known += (known.empty() ? "" : ", ") + o;
        throw_error("ValueError", "target '" + *kind + "': unknown option \"" + name +
                                      "\" (options: host, " + known + ")");
      }
      if (!has_type(value, opt->second))
        throw_error("ValueError", "target '" + *kind + "': attribute \"" + name + "\" must be " +
                                      option_type_name(opt->second) + ", not " +
                                      value_type_name(value));
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
  return make<TargetDescNode>(*kind, std::move(tag), std::move(unique), std::move(attrs),
                              std::move(host));
}

TargetDesc make_target(const std::string& text) {
  std::vector<std::string> words;
  for (const auto& w : split(text, ' '))
    if (!w.empty()) words.push_back(w);
  if (words.empty()) throw_error("ValueError", "target: the target string is empty");
  TargetConfig config{{"kind", words[0]}};
  const KindInfo& info = kind_info(words[0]);
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    size_t dashes = w.rfind("--", 0) == 0 ? 2 : w.rfind('-', 0) == 0 ? 1 : 0;
    if (dashes == 0 || w.size() == dashes)
      throw_error("ValueError",
                  "target '" + text + "': option '" + w + "' must be written -name=value");
    size_t eq = w.find('=');
    std::string name = w.substr(dashes, eq == std::string::npos ? std::string::npos : eq - dashes);
    if (name.empty())
      throw_error("ValueError", "target '" + text + "': option '" + w + "' has no name");
    if (eq == std::string::npos) {
      config[name] = true;  // a bare flag (-fast-math)
      continue;
    }
    std::string value = w.substr(eq + 1);
    auto opt = info.options.find(name);
    char type = opt == info.options.end() ? 's' : opt->second;  // unknown: make_target names it
    if (type == 'l') {
      config[name] = split(value, ',');
    } else if (type == 'i') {
      auto v = parse_int(value);
      if (!v)
        throw_error("ValueError", "target '" + text + "': option -" + name +
                                      " takes an integer, not '" + value + "'");
      config[name] = *v;
    } else if (type == 'b') {
      if (value != "true" && value != "false" && value != "1" && value != "0")
        throw_error("ValueError", "target '" + text + "': option -" + name +
                                      " takes true or false, not '" + value + "'");
      config[name] = value == "true" || value == "1";
    } else {
      config[name] = value;
    }
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
  if (index < 0)
    index = index_of([&](const VDeviceNode* v) { return same_vdevice(VDevice(v), vdevice); });
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
      throw_error("ValueError",
                  "vdevice \"" + name + "\": '" + parts[1] + "' is not a device index (0, 1, ...)");
    index = *i;
  }
  if (vdevices.empty())
    throw_error("ValueError",
                "vdevice \"" + name +
                    "\": the module declares no vdevices "
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
    throw_error("ValueError",
                "vdevice \"" + name + "\" is not among the module's vdevices (" + listed + ")");
  }
  if (parts.size() == 3 && parts[2] != found->memory_scope)
    throw_error("ValueError", "vdevice \"" + name + "\": that device has memory scope \"" +
                                  found->memory_scope + "\", not \"" + parts[2] + "\"");
  return VDevice(found);
}

}  // namespace partita
