// Runtime modules: compiled code for a set of function symbols (an external backend's output,
// a loaded shared object, ...), serializable into an exported artifact and loaded back by
// type key. This header belongs to the runtime library and sees nothing of the compiler.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "partita/runtime/tensor.h"

namespace partita::runtime {

/// The calling convention of every function a runtime module exposes (destination passing):
/// `inputs` are the call's tensor arguments; `outputs` are allocated by the caller with the
/// shapes and dtypes of the call's result (a tuple result is flattened, in order) and the
/// function writes into them. Failures throw partita::Error.
///
/// Devices and streams (the contract between the VM and every external module or generated
/// kernel):
/// - A module's functions run on one kind of device, `RuntimeModule::device_kind()`. The VM
///   passes inputs already on its device of that kind (copying those that are elsewhere) and
///   allocates the outputs there.
/// - For the duration of a VM call, the VM's device is the thread's current device
///   (DeviceAPI::set_device) and `runtime::current_stream(device)` (runtime/device_api.h) is
///   the stream the VM runs on. A function enqueues all its device work on that stream and
///   may return before the work is done; the VM, the copies it makes and later functions are
///   ordered on the same stream, and the VM never reads device results on the host without
///   synchronizing that stream. A function that uses streams of its own must make the current
///   stream wait for them (DeviceAPI::stream_wait) before it returns.
/// - Inputs and outputs stay valid until that stream's queued work is done: the caching
///   allocator reuses freed device memory only for work on the stream it was allocated on.
using PackedFunc = std::function<void(std::span<const Tensor> inputs, std::span<Tensor> outputs)>;

class RuntimeModule {
 public:
  virtual ~RuntimeModule() = default;

  /// Names the module kind; the loader registered under this key reads `save_to_binary` output.
  virtual std::string type_key() const = 0;
  /// The function for `symbol`, or an empty PackedFunc when this module does not define it
  /// (imports are not searched; see `find_function`).
  virtual PackedFunc get_function(const std::string& symbol) = 0;
  /// Symbols this module defines (for diagnostics and for the VM's link check).
  virtual std::vector<std::string> function_names() const { return {}; }
  /// The kind of device its functions read and write (see PackedFunc above).
  virtual DeviceKind device_kind() const { return DeviceKind::kCPU; }
  /// True when its functions may be captured into a CUDA Graph: they only enqueue work on the
  /// current stream (no host synchronization, no reading device results on the host, no
  /// allocation outside the runtime's allocator) and do the same for the same input shapes,
  /// so replaying the captured work is running them. The VM captures only such functions.
  virtual bool supports_graph_capture() const { return false; }
  /// Serializes the module (code, options; never the named constants, which the executable
  /// stores once). The default throws Error("ValueError") naming the type key.
  virtual void save_to_binary(std::string& out) const;
  /// The module's code in a readable form, for inspection and tests (TVM's get_source): the
  /// generated source, a serialized graph, ...; `format` picks one where a module has several.
  /// Empty when the module has none.
  virtual std::string get_source(const std::string& /*format*/ = "") const { return ""; }
  /// Names of the constants this module needs from the executable's named-constant table.
  virtual std::vector<std::string> const_names() const { return {}; }
  /// Called once at load (and by the VM before the first call) with the named constants this
  /// module asked for. The module keeps the tensors alive as long as it needs them.
  virtual void init_constants(const std::map<std::string, Tensor>& /*constants*/) {}

  const std::vector<std::shared_ptr<RuntimeModule>>& imports() const { return imports_; }
  void import_module(std::shared_ptr<RuntimeModule> module) { imports_.push_back(std::move(module)); }
  /// Looks up `symbol` in this module, then depth-first in its imports. Empty if absent.
  PackedFunc find_function(const std::string& symbol);

 private:
  std::vector<std::shared_ptr<RuntimeModule>> imports_;
};

using ModulePtr = std::shared_ptr<RuntimeModule>;
/// Rebuilds a module from the bytes its `save_to_binary` wrote. Throws Error on bad bytes.
using ModuleLoader = std::function<ModulePtr(std::string_view bytes)>;

/// Registers the loader for `type_key` (a later registration of the same key replaces it).
void register_module_loader(const std::string& type_key, ModuleLoader loader);
/// Whether a loader for `type_key` is registered now (loads no plug-in).
bool has_module_loader(const std::string& type_key);
/// Loads a module saved by a module of kind `type_key`. When no loader is registered for it,
/// the runtime plug-in plugin_for_type_key(type_key) is loaded first (partita/runtime/plugin.h).
/// Error("RuntimeError") when that plug-in cannot be loaded (naming it, the paths tried and why,
/// and the known keys), Error("KeyError") when it loads but registers no loader for the key,
/// Error("ValueError") on malformed bytes.
ModulePtr load_module_from_binary(const std::string& type_key, std::string_view bytes);

/// A module whose functions are plain C++ callables (tests, host fallbacks). Not serializable
/// unless a loader for its type key is registered by whoever creates it.
ModulePtr make_function_module(std::string type_key, std::map<std::string, PackedFunc> functions);

/// A module over a compiled shared object following the C ABI of partita/runtime/c_abi.h.
/// `so_bytes` is the whole shared-object file; it is written to a private temporary file and
/// dlopen-ed. `symbols` are the exported function names; `const_names` the named constants the
/// code needs (passed through `partita_set_constant`). Type key "dso_library"; its loader is
/// built into the runtime library, so exported artifacts holding it load anywhere.
ModulePtr make_dso_module(std::string so_bytes, std::vector<std::string> symbols,
                          std::vector<std::string> const_names = {});
/// The bytes a "dso_library" module over these parts saves (what its loader reads), without
/// loading the shared object.
std::string dso_module_binary(std::string_view so_bytes, const std::vector<std::string>& symbols,
                              const std::vector<std::string>& const_names);

/// What a module of compiled functions reports of them (function_names, const_names): the
/// `symbol` of each, and the distinct names of their `constants` in order of first use (an entry
/// is a name, or a (slot, name) pair).
template <class Functions>
std::vector<std::string> symbols_of(const Functions& functions) {
  std::vector<std::string> names;
  for (const auto& f : functions) names.push_back(f.symbol);
  return names;
}
template <class Functions>
std::vector<std::string> constant_names_of(const Functions& functions) {
  auto name = [](const auto& c) -> const std::string& {
    if constexpr (std::is_convertible_v<decltype(c), const std::string&>) return c;
    else return c.second;
  };
  std::vector<std::string> names;
  for (const auto& f : functions)
    for (const auto& c : f.constants)
      if (std::find(names.begin(), names.end(), name(c)) == names.end()) names.push_back(name(c));
  return names;
}

namespace detail {
struct ModuleLoaderRegistrar {
  ModuleLoaderRegistrar(const std::string& type_key, ModuleLoader loader) {
    register_module_loader(type_key, std::move(loader));
  }
};
}  // namespace detail

}  // namespace partita::runtime

#define PARTITA_CONCAT_INNER_(a, b) a##b
#define PARTITA_CONCAT_(a, b) PARTITA_CONCAT_INNER_(a, b)
/// At namespace scope in a backend's runtime plug-in: PARTITA_REGISTER_MODULE_LOADER("name", fn);
#define PARTITA_REGISTER_MODULE_LOADER(type_key, loader)                                     \
  static ::partita::runtime::detail::ModuleLoaderRegistrar PARTITA_CONCAT_(                  \
      partita_module_loader_, __COUNTER__)(type_key, loader)
