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
#include <tuple>

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

// Temporaries of generated code (GEMM workspaces, im2col columns, merged partitions'
// intermediates), kept by the module per (device, stream, function) as one buffer per
// allocation of a call, in call order, grown when a call needs more. Steady-state calls then
// allocate nothing, and a run captured into a CUDA Graph keeps valid temporaries for as long as
// the module lives: a buffer that had to grow is retired, not freed, since a graph may still
// write it. Calls on one stream are ordered, so reusing its buffers from call to call is safe;
// another stream has its own.
struct TempSlots {
  std::vector<Tensor> buffers;
};
struct AllocContext {
  TempSlots* slots;
  std::vector<Tensor>* retired;
  Device device;
  size_t next = 0;
};
void* alloc_cb(void* ctx, size_t bytes) {
  auto* c = static_cast<AllocContext*>(ctx);
  try {
    size_t i = c->next++;
    auto& bufs = c->slots->buffers;
    if (i < bufs.size() && bufs[i].nbytes() >= bytes) return bufs[i].data();
    Tensor t = Tensor::empty({int64_t(std::max<size_t>(bytes, 1))}, DataType::UInt(8), c->device);
    if (i < bufs.size()) {
      c->retired->push_back(std::move(bufs[i]));
      bufs[i] = std::move(t);
    } else {
      bufs.resize(i + 1);
      bufs[i] = std::move(t);
    }
    return bufs[i].data();
  } catch (...) {
    return nullptr;
  }
}
void release_cb(void*, void*) {}  // the module keeps its temporaries (above)

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
  // Its functions only enqueue work on the current stream, with temporaries the module keeps.
  // The first call loads the code and uploads the constants (host synchronizations); the VM
  // asks this when it is made and captures only a signature's second call, so that call has
  // happened by then (were a first call captured, the capture fails and the VM runs it plainly).
  bool supports_graph_capture() const override { return true; }
  std::vector<std::string> function_names() const override { return runtime::symbols_of(functions_); }
  std::vector<std::string> const_names() const override { return runtime::constant_names_of(functions_); }
  void init_constants(const std::map<std::string, Tensor>& constants) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& name : const_names()) {
      auto it = constants.find(name);
      if (it == constants.end()) throw_error("KeyError", "cutlass module: constant '" + name + "' was not provided");
      host_constants_[name] = it->second;
    }
    device_constants_.clear();  // uploaded again at the next call
    constant_views_.clear();
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
    return [this, i](std::span<const Tensor> in, std::span<Tensor> out) { call(i, in, out); };
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
    std::vector<PtFunctionAbi> entries;
    for (const auto& f : functions_) {
      void* sym = dlsym(h, f.symbol.c_str());
      if (!sym) {
        dlclose(h);
        throw_error("ValueError", "cutlass module: its compiled code lacks the function '" + f.symbol + "'");
      }
      entries.push_back(reinterpret_cast<PtFunctionAbi>(sym));
    }
    entries_ = std::move(entries);
    handle_ = h;
  }

  // The constants of function `fi` on device `id` as the call passes them, uploaded once.
  const std::vector<PartitaTensorC>& device_constants(size_t fi, int id) {
    auto& per_function = constant_views_[id];
    if (per_function.empty()) per_function.resize(functions_.size());
    auto& views = per_function[fi];
    if (views.size() == functions_[fi].constants.size()) return views;
    auto& dc = device_constants_[id];
    std::vector<PartitaTensorC> made;
    for (const auto& name : functions_[fi].constants) {
      auto it = dc.find(name);
      if (it == dc.end()) {
        auto host = host_constants_.find(name);
        if (host == host_constants_.end())
          throw_error("KeyError", "cutlass function '" + functions_[fi].symbol + "': constant '" + name +
                                      "' was not provided (init_constants)");
        const Tensor& t = host->second;
        it = dc.emplace(name, on_gpu(t) && t.device().id == id ? t : t.to(Device::cuda(id))).first;
      }
      made.push_back(to_c(it->second));
    }
    views = std::move(made);
    return views;
  }

  void call(size_t fi, std::span<const Tensor> in, std::span<Tensor> out) {
    const CutlassFunction& f = functions_[fi];
    if (in.size() != size_t(f.num_params))
      throw_error("ValueError", "cutlass function '" + f.symbol + "': expected " + std::to_string(f.num_params) +
                                    " inputs, got " + std::to_string(in.size()));
    // The GPU of the call: the VM's, from its tensors (cuda:0 for a direct call with host ones).
    Device device = Device::cuda(0);
    for (const Tensor& t : in)
      if (on_gpu(t)) device = Device::cuda(t.device().id);
    for (const Tensor& t : out)
      if (on_gpu(t)) device = Device::cuda(t.device().id);
    std::lock_guard<std::mutex> lock(mutex_);
    ensure_loaded();
    const auto& consts = device_constants(fi, device.id);
    // Host tensors (a direct call) are staged through device memory.
    std::vector<Tensor> staged_in, staged_out;
    std::vector<PartitaTensorC> cin, cout;
    cin.reserve(in.size() + consts.size());
    cout.reserve(out.size());
    for (const Tensor& t : in) {
      if (on_gpu(t)) {
        cin.push_back(to_c(t));
      } else {
        staged_in.push_back(t.to(device));
        cin.push_back(to_c(staged_in.back()));
      }
    }
    cin.insert(cin.end(), consts.begin(), consts.end());
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
    runtime::StreamHandle stream = runtime::current_stream(device);
    AllocContext ctx{&temps_[{device.id, stream, fi}], &retired_temps_, device};
    char error[1024] = {0};
    PtCallAbi c{cin.data(),
                int32_t(cin.size()),
                cout.data(),
                int32_t(cout.size()),
                stream,
                alloc_cb,
                release_cb,
                &ctx,
                error,
                sizeof error};
    int32_t rc = entries_[fi](&c);
    if (rc != 0) throw_error("RuntimeError", "cutlass function '" + f.symbol + "' failed: " + error);
    for (size_t j = 0; j < copy_back.size(); ++j) out[copy_back[j]].copy_from(staged_out[j]);
  }

  std::string source_, so_;
  std::vector<CutlassFunction> functions_;
  std::map<std::string, size_t> index_;
  mutable std::mutex mutex_;
  void* handle_ = nullptr;
  std::vector<PtFunctionAbi> entries_;  // per function, once loaded
  std::map<std::string, Tensor> host_constants_;
  std::map<int, std::map<std::string, Tensor>> device_constants_;
  std::map<int, std::vector<std::vector<PartitaTensorC>>> constant_views_;  // device -> function -> views
  std::map<std::tuple<int, runtime::StreamHandle, size_t>, TempSlots> temps_;
  std::vector<Tensor> retired_temps_;
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
