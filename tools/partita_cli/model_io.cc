#include "model_io.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "partita/backend/registry.h"
#include "partita/codegen/collage.h"
#include "partita/frontend/onnx.h"
#include "partita/script/parser.h"
#include "partita/support/error.h"
#include "partita/transform/pattern_registry.h"

namespace partita::cli {

IRModule load_model(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw_error("IOError", "cannot read '" + path + "': no such file");
  if (std::filesystem::is_directory(path, ec)) throw_error("IOError", "cannot read '" + path + "': it is a directory");
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".onnx") return frontend::from_onnx_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error("IOError", "cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return script::parse_module(ss.str(), path);
}

std::vector<std::string> parse_backends(const std::vector<std::string>& specs) {
  std::set<std::string> available;
  for (const std::string& name : transform::list_pattern_names()) {
    size_t dot = name.find('.');
    if (dot != std::string::npos) available.insert(name.substr(0, dot));
  }
  std::vector<std::string> out;
  for (const std::string& spec : specs) {
    std::stringstream ss(spec);
    std::string b;
    while (std::getline(ss, b, ',')) {
      if (b.empty()) continue;
      if (!available.count(b)) {
        std::string list;
        for (const std::string& a : available) list += (list.empty() ? "" : ", ") + a;
        throw_error("ValueError", "unknown backend '" + b + "' (available: " + list + ")");
      }
      if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    }
  }
  return out;
}

BackendChoice parse_backend_choice(const std::vector<std::string>& specs) {
  BackendChoice choice;
  std::vector<std::string> rest = specs;
  if (!rest.empty() && rest[0].rfind("auto", 0) == 0) {
    const std::string& first = rest[0];
    if (first != "auto" && first.rfind("auto:", 0) != 0)
      throw_error("ValueError", "--backends: expected 'auto' or 'auto:NAME,...', got '" + first + "'");
    choice.collage = true;
    rest[0] = first.size() > 5 ? first.substr(5) : "";
    if (rest.size() == 1 && rest[0].empty()) {  // every backend that could take something
      for (const std::string& b : backend::list_backends()) {
        auto info = backend::find_backend(b);
        if (info->codegen && !transform::get_patterns_with_prefix(b + ".").empty()) choice.backends.push_back(b);
      }
      return choice;
    }
  }
  choice.backends = parse_backends(rest);
  return choice;
}

IRModule partition(IRModule mod, const BackendChoice& choice, bool merge, const std::vector<codegen::Target>& targets,
                   bool verbose, codegen::CollageResult* placement) {
  if (choice.collage) {
    codegen::CollageOptions options;
    options.backends = choice.backends;
    options.targets = targets;
    // With the cuda target, candidates are measured on the GPU, and what no backend takes is
    // its generated kernels (as the build will run it); otherwise on this CPU.
    for (const codegen::Target& t : targets)
      if (t.kind() == "cuda") options.device = Device::cuda(0);
    codegen::CollageResult placed = codegen::collage_partition(std::move(mod), options);
    if (verbose) std::printf("%s", placed.summary().c_str());
    IRModule out = placed.mod;
    if (placement) *placement = std::move(placed);
    return out;
  }
  for (const std::string& b : choice.backends) mod = transform::partition_for(b, mod, merge);
  return mod;
}

codegen::Target parse_target(const std::string& text) {
  std::istringstream in(text);
  std::string kind, tok;
  if (!(in >> kind)) throw_error("ValueError", "empty --target");
  const codegen::TargetKindDef* def = codegen::find_target_kind(kind);
  codegen::TargetOptionMap options;
  while (in >> tok) {
    if (tok.size() < 2 || tok[0] != '-') throw_error("ValueError", "bad target option '" + tok + "' in '" + text + "': expected -name=value");
    size_t eq = tok.find('=');
    std::string name = tok.substr(tok[1] == '-' ? 2 : 1, eq == std::string::npos ? std::string::npos : eq - (tok[1] == '-' ? 2 : 1));
    std::string value = eq == std::string::npos ? "true" : tok.substr(eq + 1);
    codegen::TargetOptionType type = codegen::TargetOptionType::String;
    if (def)
      for (const auto& spec : def->options)
        if (spec.name == name) type = spec.type;
    try {
      switch (type) {
        case codegen::TargetOptionType::Bool:
          if (value != "true" && value != "false" && value != "1" && value != "0") throw 0;
          options[name] = value == "true" || value == "1";
          break;
        case codegen::TargetOptionType::Int: {
          size_t used = 0;
          int64_t v = std::stoll(value, &used);
          if (used != value.size()) throw 0;
          options[name] = v;
          break;
        }
        case codegen::TargetOptionType::String:
          options[name] = value;
          break;
        case codegen::TargetOptionType::StringList: {
          std::vector<std::string> items;
          std::stringstream ss(value);
          std::string item;
          while (std::getline(ss, item, ',')) items.push_back(item);
          options[name] = items;
          break;
        }
      }
    } catch (...) {
      throw_error("ValueError", "target option -" + name + " of '" + kind + "' expects a " +
                                    codegen::target_option_type_name(type) + ", got '" + value + "'");
    }
  }
  return codegen::Target(kind, options);
}

}  // namespace partita::cli
