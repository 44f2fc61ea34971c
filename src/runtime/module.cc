// Runtime-module registry, function modules, and the shared-object ("dso_library") module.
#include "partita/runtime/module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>

#include "partita/runtime/c_abi.h"
#include "partita/runtime/plugin.h"
#include "partita/runtime/serialize.h"
#include "partita/support/error.h"

namespace partita::runtime {

void RuntimeModule::save_to_binary(std::string&) const {
  throw_error("ValueError", "runtime module of type '" + type_key() + "' cannot be serialized");
}

PackedFunc RuntimeModule::find_function(const std::string& symbol) {
  if (PackedFunc f = get_function(symbol)) return f;
  for (auto& m : imports_)
    if (PackedFunc f = m->find_function(symbol)) return f;
  return {};
}

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, ModuleLoader>& loaders() {
  static std::map<std::string, ModuleLoader> m;
  return m;
}

}  // namespace

void register_module_loader(const std::string& type_key, ModuleLoader loader) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  loaders()[type_key] = std::move(loader);
}

bool has_module_loader(const std::string& type_key) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return loaders().count(type_key) > 0;
}

namespace {

// The registered loader for `type_key`, or an empty one.
ModuleLoader find_loader(const std::string& type_key) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = loaders().find(type_key);
  return it == loaders().end() ? ModuleLoader() : it->second;
}

std::string known_keys() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::string known;
  for (auto& [k, v] : loaders()) known += (known.empty() ? "" : ", ") + k;
  return known;
}

}  // namespace

ModulePtr load_module_from_binary(const std::string& type_key, std::string_view bytes) {
  ModuleLoader loader = find_loader(type_key);
  if (!loader) {
    // Not built in: the backend's runtime plug-in registers it when loaded (never under the
    // registry's lock, since the plug-in's initializers register loaders).
    const std::string plugin = plugin_for_type_key(type_key);
    try {
      load_plugin(plugin);
    } catch (const Error& e) {
      throw_error("RuntimeError", "no loader for runtime module type '" + type_key + "' (known: " + known_keys() +
                                      "): " + e.message());
    }
    loader = find_loader(type_key);
    if (!loader)
      throw_error("KeyError", "the runtime plug-in '" + plugin + "' registers no loader for runtime module type '" +
                                  type_key + "' (known: " + known_keys() + ")");
  }
  // A loader's own parser (a backend's JSON library, ...) may throw something else than Error
  // on malformed bytes: it is still a malformed module, not a crash (found by fuzz_artifact).
  try {
    return loader(bytes);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw_error("ValueError", "runtime module of type '" + type_key + "': out of memory while loading it");
  } catch (const std::exception& e) {
    throw_error("ValueError", "runtime module of type '" + type_key + "' is malformed: " + e.what());
  }
}

namespace {

class FunctionModule : public RuntimeModule {
 public:
  FunctionModule(std::string key, std::map<std::string, PackedFunc> fns)
      : key_(std::move(key)), fns_(std::move(fns)) {}
  std::string type_key() const override { return key_; }
  PackedFunc get_function(const std::string& symbol) override {
    auto it = fns_.find(symbol);
    return it == fns_.end() ? PackedFunc() : it->second;
  }
  std::vector<std::string> function_names() const override {
    std::vector<std::string> out;
    for (auto& [k, v] : fns_) out.push_back(k);
    return out;
  }

 private:
  std::string key_;
  std::map<std::string, PackedFunc> fns_;
};

PartitaTensorC to_c(const Tensor& t) {
  PartitaTensorC c;
  c.data = t.data();
  c.shape = t.shape().data();
  c.ndim = t.ndim();
  c.dtype_code = uint8_t(t.dtype().code());
  c.dtype_bits = uint8_t(t.dtype().bits());
  c.dtype_lanes = uint16_t(t.dtype().lanes());
  return c;
}

/// A dlopen-ed shared object. The file is unlinked right after loading: the mapping keeps it.
class DsoModule : public RuntimeModule {
 public:
  DsoModule(std::string so_bytes, std::vector<std::string> symbols, std::vector<std::string> consts)
      : bytes_(std::move(so_bytes)), symbols_(std::move(symbols)), const_names_(std::move(consts)) {
    std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    std::string path = dir + "/partita_dso_XXXXXX";
    int fd = mkstemp(path.data());
    if (fd < 0) throw_error("IOError", "cannot create a temporary file in " + dir + " for a shared object");
    size_t off = 0;
    while (off < bytes_.size()) {
      ssize_t n = ::write(fd, bytes_.data() + off, bytes_.size() - off);
      if (n <= 0) {
        ::close(fd);
        ::unlink(path.c_str());
        throw_error("IOError", "cannot write temporary shared object " + path);
      }
      off += size_t(n);
    }
    ::close(fd);
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ::unlink(path.c_str());
    if (!handle_) {
      const char* e = dlerror();
      throw_error("ValueError", std::string("cannot load the compiled shared object: ") + (e ? e : "?"));
    }
    for (const auto& s : symbols_)
      if (!dlsym(handle_, s.c_str()))
        throw_error("ValueError", "compiled shared object lacks the function symbol '" + s + "'");
    last_error_ = reinterpret_cast<PartitaLastErrorC>(dlsym(handle_, PARTITA_LAST_ERROR_SYMBOL));
  }
  ~DsoModule() override {
    if (handle_) dlclose(handle_);
  }
  std::string type_key() const override { return "dso_library"; }
  std::vector<std::string> function_names() const override { return symbols_; }
  std::vector<std::string> const_names() const override { return const_names_; }

  PackedFunc get_function(const std::string& symbol) override {
    bool known = false;
    for (auto& s : symbols_) known |= s == symbol;
    if (!known) return {};
    auto fn = reinterpret_cast<PartitaFuncC>(dlsym(handle_, symbol.c_str()));
    if (!fn) return {};
    PartitaLastErrorC last = last_error_;
    return [fn, last, symbol](std::span<const Tensor> in, std::span<Tensor> out) {
      PartitaTensorC cin[16], cout[16];
      std::vector<PartitaTensorC> vin, vout;
      PartitaTensorC* pin = cin;
      PartitaTensorC* pout = cout;
      if (in.size() > 16) { vin.resize(in.size()); pin = vin.data(); }
      if (out.size() > 16) { vout.resize(out.size()); pout = vout.data(); }
      for (size_t i = 0; i < in.size(); ++i) pin[i] = to_c(in[i]);
      for (size_t i = 0; i < out.size(); ++i) pout[i] = to_c(out[i]);
      int32_t rc = fn(pin, int32_t(in.size()), pout, int32_t(out.size()));
      if (rc != 0) {
        const char* msg = last ? last() : nullptr;
        throw_error("RuntimeError", "external function '" + symbol + "' failed (code " + std::to_string(rc) +
                                        ")" + (msg ? std::string(": ") + msg : std::string()));
      }
    };
  }

  void init_constants(const std::map<std::string, Tensor>& constants) override {
    auto set = reinterpret_cast<PartitaSetConstantC>(dlsym(handle_, PARTITA_SET_CONSTANT_SYMBOL));
    for (const auto& name : const_names_) {
      auto it = constants.find(name);
      if (it == constants.end())
        throw_error("KeyError", "named constant '" + name + "' needed by a compiled module is missing");
      if (!set) throw_error("ValueError", "compiled module needs constants but lacks partita_set_constant");
      kept_[name] = it->second;
      PartitaTensorC c = to_c(kept_[name]);
      if (set(name.c_str(), &c) != 0)
        throw_error("RuntimeError", "compiled module rejected the named constant '" + name + "'");
    }
  }

  void save_to_binary(std::string& out) const override { out += dso_module_binary(bytes_, symbols_, const_names_); }

 private:
  std::string bytes_;
  std::vector<std::string> symbols_, const_names_;
  void* handle_ = nullptr;
  PartitaLastErrorC last_error_ = nullptr;
  std::map<std::string, Tensor> kept_;
};

ModulePtr load_dso(std::string_view bytes) {
  Reader r(bytes, "dso_library module");
  std::vector<std::string> symbols, consts;
  for (uint64_t n = r.count("symbol count", 8); n--;) symbols.push_back(r.str("symbol"));
  for (uint64_t n = r.count("constant count", 8); n--;) consts.push_back(r.str("constant name"));
  std::string so = r.str("shared object");
  if (!r.at_end()) r.fail("trailing bytes");
  return std::make_shared<DsoModule>(std::move(so), std::move(symbols), std::move(consts));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER("dso_library", load_dso);

ModulePtr make_function_module(std::string type_key, std::map<std::string, PackedFunc> functions) {
  return std::make_shared<FunctionModule>(std::move(type_key), std::move(functions));
}

ModulePtr make_dso_module(std::string so_bytes, std::vector<std::string> symbols,
                          std::vector<std::string> const_names) {
  return std::make_shared<DsoModule>(std::move(so_bytes), std::move(symbols), std::move(const_names));
}

std::string dso_module_binary(std::string_view so_bytes, const std::vector<std::string>& symbols,
                              const std::vector<std::string>& const_names) {
  std::string out;
  Writer w(out);
  w.u64(symbols.size());
  for (auto& s : symbols) w.str(s);
  w.u64(const_names.size());
  for (auto& s : const_names) w.str(s);
  w.str(so_bytes);
  return out;
}

}  // namespace partita::runtime
