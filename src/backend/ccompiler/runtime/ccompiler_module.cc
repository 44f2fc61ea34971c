// The "ccompiler" runtime module (this backend's runtime plug-in): generated C source plus the
// shared object compiled from it. Function calls, constants and dlopen are delegated to the
// runtime's "dso_library" module; this wrapper keeps the source with the code, so exported
// artifacts can be inspected (get_source).
#include "../module_format.h"
#include "partita/runtime/module.h"

namespace partita::backend::ccompiler {
namespace {

class CCompilerModule : public runtime::RuntimeModule {
 public:
  CCompilerModule(std::string source, std::string dso_blob, runtime::ModulePtr dso)
      : source_(std::move(source)), dso_blob_(std::move(dso_blob)), dso_(std::move(dso)) {}

  std::string type_key() const override { return kModuleFormat.type_key; }
  runtime::PackedFunc get_function(const std::string& symbol) override { return dso_->get_function(symbol); }
  std::vector<std::string> function_names() const override { return dso_->function_names(); }
  std::vector<std::string> const_names() const override { return dso_->const_names(); }
  void init_constants(const std::map<std::string, Tensor>& constants) override { dso_->init_constants(constants); }
  void save_to_binary(std::string& out) const override {
    out += runtime::write_module_sections(kModuleFormat, {source_, dso_blob_});
  }
  std::string get_source(const std::string& format) const override {
    return format.empty() || format == "c" ? source_ : "";
  }

 private:
  std::string source_;
  std::string dso_blob_;  // the dso_library module's own bytes
  runtime::ModulePtr dso_;
};

runtime::ModulePtr load_ccompiler(std::string_view bytes) {
  auto sections = runtime::read_module_sections(kModuleFormat, bytes, {"C source", "shared object module"});
  runtime::ModulePtr dso = runtime::load_module_from_binary("dso_library", sections[1]);
  return std::make_shared<CCompilerModule>(std::move(sections[0]), std::move(sections[1]), std::move(dso));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(kModuleFormat.type_key, load_ccompiler);

}  // namespace partita::backend::ccompiler
