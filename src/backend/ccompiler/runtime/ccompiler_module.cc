// The "ccompiler" runtime module: generated C source plus the shared object compiled from it.
// Function calls, constants and dlopen are delegated to the runtime's "dso_library" module;
// this wrapper keeps the source with the code, so exported artifacts can be inspected.
#include "partita/backend/ccompiler_runtime.h"

#include "partita/runtime/serialize.h"

namespace partita::backend::ccompiler {
namespace {

constexpr uint32_t kMagic = 0x43435450;  // "PTCC"
constexpr uint32_t kVersion = 1;

class CCompilerModule : public runtime::RuntimeModule {
 public:
  CCompilerModule(std::string source, std::string dso_blob, runtime::ModulePtr dso)
      : source_(std::move(source)), dso_blob_(std::move(dso_blob)), dso_(std::move(dso)) {}

  std::string type_key() const override { return "ccompiler"; }
  runtime::PackedFunc get_function(const std::string& symbol) override { return dso_->get_function(symbol); }
  std::vector<std::string> function_names() const override { return dso_->function_names(); }
  std::vector<std::string> const_names() const override { return dso_->const_names(); }
  void init_constants(const std::map<std::string, Tensor>& constants) override { dso_->init_constants(constants); }
  void save_to_binary(std::string& out) const override {
    runtime::Writer w(out);
    w.u32(kMagic);
    w.u32(kVersion);
    w.str(source_);
    w.str(dso_blob_);
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::string dso_blob_;  // the dso_library module's own binary
  runtime::ModulePtr dso_;
};

runtime::ModulePtr load_ccompiler(std::string_view bytes) {
  runtime::Reader r(bytes, "ccompiler module");
  if (r.u32("magic") != kMagic) r.fail("not a ccompiler module (bad magic)");
  uint32_t version = r.u32("version");
  if (version != kVersion) r.fail("unsupported ccompiler module version " + std::to_string(version));
  std::string source = r.str("C source");
  std::string blob = r.str("shared object module");
  if (!r.at_end()) r.fail("trailing bytes");
  runtime::ModulePtr dso = runtime::load_module_from_binary("dso_library", blob);
  return std::make_shared<CCompilerModule>(std::move(source), std::move(blob), std::move(dso));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER("ccompiler", load_ccompiler);

runtime::ModulePtr make_ccompiler_module(std::string source, std::string so_bytes, std::vector<std::string> symbols,
                                         std::vector<std::string> const_names) {
  runtime::ModulePtr dso = runtime::make_dso_module(std::move(so_bytes), std::move(symbols), std::move(const_names));
  std::string blob;
  dso->save_to_binary(blob);
  return std::make_shared<CCompilerModule>(std::move(source), std::move(blob), std::move(dso));
}

std::string ccompiler_module_source(const runtime::RuntimeModule& module) {
  if (auto* m = dynamic_cast<const CCompilerModule*>(&module)) return m->source();
  return "";
}

}  // namespace partita::backend::ccompiler
