// The "cutlass" runtime module (this backend's runtime plug-in): the shared object nvcc made of
// a module's generated C++, dlopen-ed at its first call (so loading an artifact needs no GPU),
// called with the VM's CUDA tensors and current stream. The plug-in links no CUDA library: the
// generated code does all CUDA work, and device memory (named constants, temporaries) comes
// from the runtime's CUDA device API, so it is the VM's caching allocator, ordered on its stream.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "../module_format.h"
#include "partita/runtime/c_abi.h"
#include "partita/runtime/device_api.h"
#include "partita/runtime/module.h"

namespace partita::backend::cutlass {
namespace {

bool on_gpu(const Tensor& t) {
  return t.device().kind == DeviceKind::kCUDA || t.device().kind == DeviceKind::kCUDAManaged;
}

PartitaTensorC to_c(const Tensor& t) {
  PartitaTensorC c{};
  c.data = const_cast<void*>(t.data());
  c.shape = t.shape().data();
  c.ndim = int32_t(t.ndim());
  c.dtype_code = uint8_t(t.dtype().code());
  c.dtype_bits = uint8_t(t.dtype().bits());
  c.dtype_lanes = 1;
  return c;
}

// The allocator handed to generated code: the device API of the call's GPU.
struct AllocContext {
  runtime::DeviceAPI* api;
  int id;
};
void* alloc_cb(void* ctx, size_t bytes) {
  auto* c = static_cast<AllocContext*>(ctx);
  try {
    return c->api->alloc(c->id, bytes);
  } catch (...) {
    return nullptr;
  }
}
void release_cb(void* ctx, void* ptr) {
  auto* c = static_cast<AllocContext*>(ctx);
  c->api->free(c->id, ptr);
}

class CutlassModule : public runtime::RuntimeModule {
 public:
  CutlassModule(std::string source, std::string so, std::vector<CutlassFunction> functions)
      : source_(std::move(source)), so_(std::move(so)), functions_(std::move(functions)) {
    for (size_t i = 0; i < functions_.size(); ++i) index_[functions_[i].symbol] = i;
  }
  ~CutlassModule() override {
    if (handle_) dlclose(handle_);
  }

  std::string type_key() const override { return kModuleFormat.type_key; }
  DeviceKind device_kind() const override { return DeviceKind::kCUDA; }
  // Its functions only enqueue work on the current stream (and allocate through the runtime);
  // once the code is loaded and the constants uploaded, a run can be captured.
  bool supports_graph_capture() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return handle_ != nullptr;
  }
  std::vector<std::string> function_names() const override {
    std::vector<std::string> names;
    for (const auto& f : functions_) names.push_back(f.symbol);
    return names;
  }
  std::vector<std::string> const_names() const override {
    std::vector<std::string> names;
    for (const auto& f : functions_)
      for (const auto& c : f.constants)
        if (std::find(names.begin(), names.end(), c) == names.end()) names.push_back(c);
    return names;
  }
  void init_constants(const std::map<std::string, Tensor>& constants) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& name : const_names()) {
      auto it = constants.find(name);
      if (it == constants.end()) throw_error("KeyError", "cutlass module: constant '" + name + "' was not provided");
      host_constants_[name] = it->second;
    }
  }
  void save_to_binary(std::string& out) const override {
    out += runtime::write_module_sections(kModuleFormat, {source_, so_, write_function_table(functions_)});
  }
  // The generated C++; "so": the compiled shared object's bytes.
  std::string get_source(const std::string& format) const override { return format == "so" ? so_ : source_; }

  runtime::PackedFunc get_function(const std::string& symbol) override {
    auto it = index_.find(symbol);
    if (it == index_.end()) return nullptr;
    size_t i = it->second;
    return [this, i](std::span<const Tensor> in, std::span<Tensor> out) { call(functions_[i], in, out); };
  }

 private:
  void ensure_loaded() {
    if (handle_) return;
    char path[] = "/tmp/partita_cutlass_XXXXXX.so";
    int fd = mkstemps(path, 3);
    if (fd < 0) throw_error("IOError", "cutlass module: cannot create a temporary file for its shared object");
    size_t off = 0;
    while (off < so_.size()) {
      ssize_t n = ::write(fd, so_.data() + off, so_.size() - off);
      if (n <= 0) {
        ::close(fd);
        ::unlink(path);
        throw_error("IOError", "cutlass module: cannot write its shared object");
      }
      off += size_t(n);
    }
    ::close(fd);
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ::unlink(path);
    if (!h) {
      const char* e = dlerror();
      throw_error("RuntimeError", std::string("cutlass module: cannot load its compiled code (the CUDA runtime "
                                              "library must be on the loader's path): ") +
                                      (e ? e : "?"));
    }
    for (const auto& f : functions_) {
      void* sym = dlsym(h, f.symbol.c_str());
      if (!sym) {
        dlclose(h);
        throw_error("ValueError", "cutlass module: its compiled code lacks the function '" + f.symbol + "'");
      }
      entries_[f.symbol] = reinterpret_cast<PtFunctionAbi>(sym);
    }
    handle_ = h;
  }

  // The constants on device `id`, uploaded once.
  const std::map<std::string, Tensor>& device_constants(int id) {
    auto& dc = device_constants_[id];
    if (dc.size() != host_constants_.size())
      for (const auto& [name, t] : host_constants_)
        if (!dc.count(name)) dc[name] = on_gpu(t) && t.device().id == id ? t : t.to(Device::cuda(id));
    return dc;
  }

  void call(const CutlassFunction& f, std::span<const Tensor> in, std::span<Tensor> out) {
    if (in.size() != size_t(f.num_params))
      throw_error("ValueError", "cutlass function '" + f.symbol + "': expected " + std::to_string(f.num_params) +
                                    " inputs, got " + std::to_string(in.size()));
    // The GPU of the call: the VM's, from its tensors (cuda:0 for a direct call with host ones).
    Device device = Device::cuda(0);
    for (const Tensor& t : in)
      if (on_gpu(t)) device = Device::cuda(t.device().id);
    for (const Tensor& t : out)
      if (on_gpu(t)) device = Device::cuda(t.device().id);
    runtime::DeviceAPI* api = runtime::device_api(device);
    std::lock_guard<std::mutex> lock(mutex_);
    ensure_loaded();
    const auto& consts = device_constants(device.id);
    // Host tensors (a direct call) are staged through device memory.
    std::vector<Tensor> staged_in, staged_out;
    std::vector<PartitaTensorC> cin, cout;
    for (const Tensor& t : in) {
      if (on_gpu(t)) {
        cin.push_back(to_c(t));
      } else {
        staged_in.push_back(t.to(device));
        cin.push_back(to_c(staged_in.back()));
      }
    }
    for (const auto& c : f.constants) cin.push_back(to_c(consts.at(c)));
    std::vector<size_t> copy_back;
    staged_out.reserve(out.size());
    for (size_t k = 0; k < out.size(); ++k) {
      if (on_gpu(out[k])) {
        cout.push_back(to_c(out[k]));
      } else {
        staged_out.push_back(Tensor::empty(out[k].shape(), out[k].dtype(), device));
        cout.push_back(to_c(staged_out.back()));
        copy_back.push_back(k);
      }
    }
    AllocContext ctx{api, device.id};
    char error[1024] = {0};
    PtCallAbi c{cin.data(),
                int32_t(cin.size()),
                cout.data(),
                int32_t(cout.size()),
                runtime::current_stream(device),
                alloc_cb,
                release_cb,
                &ctx,
                error,
                sizeof error};
    int32_t rc = entries_.at(f.symbol)(&c);
    if (rc != 0) throw_error("RuntimeError", "cutlass function '" + f.symbol + "' failed: " + error);
    for (size_t j = 0; j < copy_back.size(); ++j) out[copy_back[j]].copy_from(staged_out[j]);
  }

  std::string source_, so_;
  std::vector<CutlassFunction> functions_;
  std::map<std::string, size_t> index_;
  mutable std::mutex mutex_;
  void* handle_ = nullptr;
  std::map<std::string, PtFunctionAbi> entries_;
  std::map<std::string, Tensor> host_constants_;
  std::map<int, std::map<std::string, Tensor>> device_constants_;
};

runtime::ModulePtr load_cutlass(std::string_view bytes) {
  auto sections =
      runtime::read_module_sections(kModuleFormat, bytes, {"generated C++", "shared object", "function table"});
  return std::make_shared<CutlassModule>(std::move(sections[0]), std::move(sections[1]),
                                         read_function_table(sections[2]));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(kModuleFormat.type_key, load_cutlass);

}  // namespace partita::backend::cutlass
