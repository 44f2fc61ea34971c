// The codegen registry, ConstantNamer and name_codegen_constants (see codegen.h).
#include <mutex>

#include "partita/codegen/codegen.h"
#include "partita/ir/functor.h"

namespace partita::codegen {
namespace {

struct CodegenRegistry {
  std::mutex mu;
  std::map<std::string, CodegenFn> codegens;
};

CodegenRegistry& registry() {
  static CodegenRegistry r;
  return r;
}

}  // namespace

void register_codegen(const std::string& name, CodegenFn fn) {
  if (!find_target_kind(name)) register_target_kind(TargetKindDef{name, {}});
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.codegens[name] = std::move(fn);
}

const CodegenFn* find_codegen(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.codegens.find(name);
  return it == r.codegens.end() ? nullptr : &it->second;
}

std::vector<std::string> list_codegens() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, fn] : r.codegens) out.push_back(name);
  return out;
}

CodegenResult module_from_bytes(const std::string& type_key, const std::string& bytes,
                                const ConstantNamer& namer) {
  CodegenResult result;
  result.modules.push_back(runtime::load_module_from_binary(type_key, bytes));
  result.constants = namer.added();
  return result;
}

ConstantNamer::ConstantNamer(const std::map<std::string, Tensor>& existing) : all_(existing) {
  for (const auto& [name, t] : all_) {
    by_hash_.emplace(t.content_hash(), name);
    by_buffer_.emplace(t.data(), name);
  }
}

std::string ConstantNamer::name_for(const Tensor& tensor, const std::string& symbol) {
  auto [blo, bhi] = by_buffer_.equal_range(tensor.data());
  for (auto it = blo; it != bhi; ++it) {
    const Tensor& t = all_.at(it->second);
    if (t.same_buffer(tensor) && t.shape() == tensor.shape() && t.dtype() == tensor.dtype()) return it->second;
  }
  size_t h = tensor.content_hash();
  auto [lo, hi] = by_hash_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (all_.at(it->second).content_equal(tensor)) return it->second;
  std::string name;
  for (int& i = next_index_[symbol];; ++i) {
    name = symbol + "_const_" + std::to_string(i);
    if (!all_.count(name)) break;
  }
  all_[name] = tensor;
  added_[name] = tensor;
  by_hash_.emplace(h, name);
  by_buffer_.emplace(tensor.data(), name);
  return name;
}

namespace {

class ConstantCollector : public ExprVisitor {
 public:
  std::vector<Tensor> found;
  void visit_(const ConstantNode* op) override { found.push_back(op->data); }
};

}  // namespace

IRModule name_codegen_constants(IRModule mod) {
  ConstantNamer namer(mod->const_name_to_constant);
  for (const auto& [gv, func] : mod.functions()) {
    auto* fn = func.as<FunctionNode>();
    if (!fn || !fn->attrs.count("Codegen")) continue;
    ConstantCollector collector;
    collector.visit_expr(func);
    std::string symbol = fn->attr_string("global_symbol").value_or(gv->name_hint);
    for (const auto& t : collector.found) namer.name_for(t, symbol);
  }
  if (namer.added().empty()) return mod;
  IRModule out = mod;
  auto* node = out.cow();
  for (const auto& [name, t] : namer.added()) node->const_name_to_constant[name] = t;
  return out;
}

transform::Pass NameCodegenConstants() {
  return transform::create_module_pass(
      [](IRModule mod, const transform::PassContext&) { return name_codegen_constants(std::move(mod)); }, 0,
      "NameCodegenConstants");
}

std::vector<runtime::ModulePtr> external_mods_of(const IRModule& mod) {
  auto it = mod->attrs.find("external_mods");
  if (it == mod->attrs.end()) return {};
  auto* holder = it->second.as<ExternalModulesNode>();
  return holder ? holder->modules : std::vector<runtime::ModulePtr>{};
}

}  // namespace partita::codegen
