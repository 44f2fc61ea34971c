// The "cuda" runtime module of generated kernels (see ../kernel_launch.h): loads its cubin once
// with cudaLibraryLoadData, finds each kernel with cudaLibraryGetKernel and launches it on the
// current stream of the tensors' CUDA device (runtime/device_api.h), so the VM on a CUDA device
// (which passes CUDA tensors: device_kind() is kCUDA) can capture a run as a CUDA Graph. Tensors
// in host memory (a direct call of a function) are staged through device memory. The cubin is
// loaded and the named constants uploaded when the constants are given, on a machine with a GPU,
// else at the first call: loading an artifact needs no GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "../kernel_launch.h"
#include "partita/runtime/device_api.h"

namespace partita::backend::cuda {

bool cuda_device_available(std::string* why);

namespace {

[[noreturn]] void cuda_fail(cudaError_t err, const std::string& what) {
  throw_error("RuntimeError", "cuda: " + what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

void check(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) cuda_fail(err, what);
}

// Device memory owned for one call (staging of host tensors).
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
};

bool on_gpu(const Tensor& t) { return t.device().kind == DeviceKind::kCUDA || t.device().kind == DeviceKind::kCUDAManaged; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

class CudaKernelModule : public runtime::RuntimeModule {
 public:
  CudaKernelModule(std::string source, std::string cubin, std::vector<KernelFunction> functions)
      : source_(std::move(source)), cubin_(std::move(cubin)), functions_(std::move(functions)) {
    for (size_t i = 0; i < functions_.size(); ++i) index_[functions_[i].symbol] = i;
  }
  ~CudaKernelModule() override {
    for (void* p : device_constants_) cudaFree(p);
    if (library_) cudaLibraryUnload(library_);
  }

  std::string type_key() const override { return "cuda"; }
  DeviceKind device_kind() const override { return DeviceKind::kCUDA; }
  // Launches only, on the current stream, once loaded (loading copies constants synchronously).
  bool supports_graph_capture() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return library_ != nullptr;
  }

  runtime::PackedFunc get_function(const std::string& symbol) override {
    auto it = index_.find(symbol);
    if (it == index_.end()) return nullptr;
    size_t i = it->second;
    return [this, i](std::span<const Tensor> in, std::span<Tensor> out) { call(functions_[i], in, out); };
  }

  std::vector<std::string> function_names() const override { return runtime::symbols_of(functions_); }
  std::vector<std::string> const_names() const override { return runtime::constant_names_of(functions_); }

  // Kept on the host; with a GPU here the cubin is loaded and the constants uploaded now, else
  // at the first call (so that loading an artifact needs no GPU).
  void init_constants(const std::map<std::string, Tensor>& constants) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& name : const_names()) {
      auto it = constants.find(name);
      if (it == constants.end()) throw_error("KeyError", "cuda module: constant '" + name + "' was not provided");
      host_constants_[name] = it->second.device().is_host_accessible() ? it->second : it->second.to(Device::cpu());
    }
    if (cuda_device_available(nullptr)) ensure_loaded();
  }

  void save_to_binary(std::string& out) const override { out += write_cuda_module(source_, cubin_, functions_); }

  // The CUDA source; "cubin": the compiled kernels' bytes.
  std::string get_source(const std::string& format) const override { return format == "cubin" ? cubin_ : source_; }

  const std::string& source() const { return source_; }
  const std::string& cubin() const { return cubin_; }

 private:
  // Loads the cubin and finds every kernel, once.
  void ensure_loaded() {
    if (library_) return;
    std::string why;
    if (!cuda_device_available(&why)) throw_error("RuntimeError", "cuda module: no CUDA device: " + why);
    cudaLibrary_t lib = nullptr;
    check(cudaLibraryLoadData(&lib, cubin_.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "loading the generated kernels (cudaLibraryLoadData)");
    for (const auto& f : functions_)
      for (const std::string* name : {&f.kernel, &f.vector_kernel}) {
        if (name->empty()) continue;
        cudaKernel_t k = nullptr;
        cudaError_t err = cudaLibraryGetKernel(&k, lib, name->c_str());
        if (err != cudaSuccess) {
          cudaLibraryUnload(lib);
          cuda_fail(err, "kernel '" + *name + "' of function '" + f.symbol + "' is not in the cubin");
        }
        kernels_[*name] = k;
      }
    for (const auto& [name, t] : host_constants_) {
      void* p = nullptr;
      check(cudaMalloc(&p, std::max<size_t>(t.nbytes(), 1)), "allocating constant '" + name + "'");
      device_constants_.push_back(p);
      check(cudaMemcpy(p, t.data(), t.nbytes(), cudaMemcpyHostToDevice), "uploading constant '" + name + "'");
      constant_ptr_[name] = p;
    }
    library_ = lib;
  }

  void call(const KernelFunction& f, std::span<const Tensor> in, std::span<Tensor> out) {
    if (in.size() != f.inputs.size() || out.size() != f.outputs.size())
      throw_error("ValueError", "cuda function '" + f.symbol + "': expected " + std::to_string(f.inputs.size()) +
                                    " inputs and " + std::to_string(f.outputs.size()) + " outputs, got " +
                                    std::to_string(in.size()) + " and " + std::to_string(out.size()));
    // Symbolic dimensions, then every shape against its program.
    std::vector<int64_t> syms(f.sym_sources.size());
    for (size_t s = 0; s < syms.size(); ++s) {
      const DimSource& src = f.sym_sources[s];
      const Tensor& t = src.output ? out[size_t(src.tensor)] : in[size_t(src.tensor)];
      if (src.dim >= t.ndim())
        throw_error("ValueError", "cuda function '" + f.symbol + "': " + (src.output ? "output " : "input ") +
                                      std::to_string(src.tensor) + " has rank " + std::to_string(t.ndim()));
      int64_t extent = t.shape()[size_t(src.dim)] - src.offset;
      if (extent % src.scale != 0)
        throw_error("ValueError", "cuda function '" + f.symbol + "': " + (src.output ? "output " : "input ") +
                                      std::to_string(src.tensor) + " dimension " + std::to_string(src.dim) + " is " +
                                      std::to_string(t.shape()[size_t(src.dim)]) + ", not " + std::to_string(src.scale) +
                                      " * n + " + std::to_string(src.offset));
      syms[s] = extent / src.scale;
    }
    auto check_tensor = [&](const Tensor& t, const TensorSignature& sig, const char* what, size_t k) {
      std::string where = "cuda function '" + f.symbol + "': " + what + " " + std::to_string(k);
      if (!(t.dtype() == sig.dtype))
        throw_error("TypeError", where + " has dtype " + t.dtype().str() + ", expected " + sig.dtype.str());
      bool ok = t.ndim() == int(sig.shape.size());
      std::vector<int64_t> expected;
      for (const auto& d : sig.shape) expected.push_back(runtime::eval_dim(d, syms.data(), syms.size()));
      for (size_t d = 0; ok && d < expected.size(); ++d) ok = t.shape()[d] == expected[d];
      if (!ok) throw_error("ValueError", where + " has shape " + shape_str(t.shape()) + ", expected " + shape_str(expected));
    };
    for (size_t k = 0; k < in.size(); ++k) check_tensor(in[k], f.inputs[k], "input", k);
    for (size_t k = 0; k < out.size(); ++k) check_tensor(out[k], f.outputs[k], "output", k);

    std::lock_guard<std::mutex> lock(mutex_);
    ensure_loaded();
    // The stream of the tensors' device (the VM's current stream for this call).
    Device device = Device::cuda();
    for (const Tensor& t : in)
      if (on_gpu(t)) device = Device::cuda(t.device().id);
    for (const Tensor& t : out)
      if (on_gpu(t)) device = Device::cuda(t.device().id);
    auto stream = static_cast<cudaStream_t>(runtime::current_stream(device));
    // Device pointers: tensors already on the GPU are used in place; host tensors are staged.
    std::vector<DeviceBuffer> staged;
    staged.reserve(in.size() + out.size());
    std::vector<void*> in_ptrs, out_ptrs;
    for (const Tensor& t : in) {
      if (t.nbytes() == 0 || on_gpu(t)) {
        in_ptrs.push_back(t.data());
        continue;
      }
      staged.emplace_back();
      if (!t.device().is_host_accessible())
        throw_error("ValueError", "cuda function '" + f.symbol + "': an input is on " + t.device().str());
      check(cudaMalloc(&staged.back().ptr, t.nbytes()), "staging an input");
      check(cudaMemcpyAsync(staged.back().ptr, t.data(), t.nbytes(), cudaMemcpyHostToDevice, stream), "staging an input");
      in_ptrs.push_back(staged.back().ptr);
    }
    std::vector<size_t> copy_back;
    for (size_t k = 0; k < out.size(); ++k) {
      const Tensor& t = out[k];
      if (t.nbytes() == 0 || on_gpu(t)) {
        out_ptrs.push_back(t.data());
        continue;
      }
      if (!t.device().is_host_accessible())
        throw_error("ValueError", "cuda function '" + f.symbol + "': an output is on " + t.device().str());
      staged.emplace_back();
      check(cudaMalloc(&staged.back().ptr, t.nbytes()), "staging an output");
      out_ptrs.push_back(staged.back().ptr);
      copy_back.push_back(k);
    }
    // The vector variant when every pointer it accesses 16 bytes at a time is aligned for it.
    auto aligned = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; };
    bool vector = !f.vector_kernel.empty();
    for (int32_t k : f.vector_inputs) vector = vector && aligned(in_ptrs[size_t(k)]);
    for (void* p : out_ptrs) vector = vector && aligned(p);
    const std::string& kernel = vector ? f.vector_kernel : f.kernel;
    const auto& grid_programs = vector ? f.vector_grid : f.grid;
    std::array<int64_t, 3> grid{};
    for (int d = 0; d < 3; ++d) grid[size_t(d)] = runtime::eval_dim(grid_programs[size_t(d)], syms.data(), syms.size());
    if (grid[0] > 0 && grid[1] > 0 && grid[2] > 0) {
      std::vector<void*> args;
      std::vector<void*> const_ptrs;
      for (const auto& c : f.constants) const_ptrs.push_back(constant_ptr_.at(c));
      for (auto& p : in_ptrs) args.push_back(&p);
      for (auto& p : const_ptrs) args.push_back(&p);
      for (auto& p : out_ptrs) args.push_back(&p);
      std::vector<long long> sym_args(syms.begin(), syms.end());
      for (auto& s : sym_args) args.push_back(&s);
      // Kernels loop over what a capped grid leaves (grid-stride), so clamping is safe.
      dim3 g(unsigned(std::min<int64_t>(grid[0], 0x7fffffff)), unsigned(std::min<int64_t>(grid[1], 65535)),
             unsigned(std::min<int64_t>(grid[2], 65535)));
      dim3 b(f.block[0], f.block[1], f.block[2]);
      check(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_.at(kernel)), g, b, args.data(),
                             f.dynamic_shared_bytes, stream),
            "launching kernel '" + kernel + "' of function '" + f.symbol + "'");
    }
    size_t first_out = staged.size() - copy_back.size();
    for (size_t j = 0; j < copy_back.size(); ++j) {
      Tensor& t = out[copy_back[j]];
      check(cudaMemcpyAsync(t.data(), staged[first_out + j].ptr, t.nbytes(), cudaMemcpyDeviceToHost, stream),
            "copying an output back");
    }
    // Staging buffers are freed on return (cudaFree waits for the stream's work on them); with
    // host outputs the caller reads the result at once, so wait for it.
    if (!staged.empty()) check(cudaStreamSynchronize(stream), "running kernel '" + f.kernel + "'");
  }

  std::string source_;
  std::string cubin_;
  std::vector<KernelFunction> functions_;
  std::map<std::string, size_t> index_;
  mutable std::mutex mutex_;
  cudaLibrary_t library_ = nullptr;
  std::map<std::string, cudaKernel_t> kernels_;
  std::map<std::string, Tensor> host_constants_;
  std::map<std::string, void*> constant_ptr_;
  std::vector<void*> device_constants_;
};

runtime::ModulePtr load_cuda_module(std::string_view bytes) {
  auto sections = runtime::read_module_sections(kModuleFormat, bytes, {"CUDA source", "cubin", "launch table"});
  return std::make_shared<CudaKernelModule>(std::move(sections[0]), std::move(sections[1]),
                                            read_launch_table(sections[2]));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(kModuleFormat.type_key, load_cuda_module);

bool cuda_device_available(std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
    cudaGetLastError();
    return false;
  }
  if (count == 0) {
    if (why) *why = "the CUDA runtime reports no devices";
    return false;
  }
  return true;
}

}  // namespace partita::backend::cuda
