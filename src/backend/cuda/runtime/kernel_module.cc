// The "cuda" runtime module (see cuda_kernel_module.h): loads its cubin once with
// cudaLibraryLoadData, finds each kernel with cudaLibraryGetKernel and launches it on the stream
// with the tensors' device pointers.
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "partita/backend/cuda_kernel_module.h"
#include "partita/runtime/serialize.h"

namespace partita::backend::cuda {
namespace {

constexpr uint32_t kMagic = 0x41445543;  // "CUDA"
constexpr uint32_t kVersion = 1;

[[noreturn]] void cuda_fail(cudaError_t err, const std::string& what) {
  throw_error("RuntimeError", "cuda: " + what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

void check(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) cuda_fail(err, what);
}

// The stream generated kernels run on. The legacy default stream until the device runtime gives
// each call its stream.
cudaStream_t current_stream() { return nullptr; }

// Device memory owned for one call (staging of host tensors).
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
};

bool is_device_pointer(const void* p) {
  if (!p) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "invalid value" of an unknown pointer
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

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

  runtime::PackedFunc get_function(const std::string& symbol) override {
    auto it = index_.find(symbol);
    if (it == index_.end()) return nullptr;
    size_t i = it->second;
    return [this, i](std::span<const Tensor> in, std::span<Tensor> out) { call(functions_[i], in, out); };
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

  // Kept on the host here; uploaded at the first call, so that loading needs no GPU.
  void init_constants(const std::map<std::string, Tensor>& constants) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& name : const_names()) {
      auto it = constants.find(name);
      if (it == constants.end()) throw_error("KeyError", "cuda module: constant '" + name + "' was not provided");
      host_constants_[name] = it->second;
    }
  }

  void save_to_binary(std::string& out) const override {
    runtime::Writer w(out);
    w.u32(kMagic);
    w.u32(kVersion);
    w.str(source_);
    w.str(cubin_);
    w.u64(functions_.size());
    for (const auto& f : functions_) {
      w.str(f.symbol);
      w.str(f.kernel);
      for (const auto* list : {&f.inputs, &f.outputs}) {
        w.u64(list->size());
        for (const auto& t : *list) {
          w.u8(uint8_t(t.dtype.code()));
          w.u8(uint8_t(t.dtype.bits()));
          w.u64(t.shape.size());
          for (const auto& d : t.shape) w.i64s(d);
        }
      }
      w.u64(f.constants.size());
      for (const auto& c : f.constants) w.str(c);
      w.u64(f.sym_sources.size());
      for (const auto& s : f.sym_sources) {
        w.u8(s.output ? 1 : 0);
        w.i64(s.tensor);
        w.i64(s.dim);
      }
      for (const auto& g : f.grid) w.i64s(g);
      for (uint32_t b : f.block) w.u32(b);
      w.u32(f.dynamic_shared_bytes);
    }
  }

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
    for (const auto& f : functions_) {
      cudaKernel_t k = nullptr;
      cudaError_t err = cudaLibraryGetKernel(&k, lib, f.kernel.c_str());
      if (err != cudaSuccess) {
        cudaLibraryUnload(lib);
        cuda_fail(err, "kernel '" + f.kernel + "' of function '" + f.symbol + "' is not in the cubin");
      }
      kernels_[f.kernel] = k;
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
      syms[s] = t.shape()[size_t(src.dim)];
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

    std::array<int64_t, 3> grid{};
    for (int d = 0; d < 3; ++d) grid[size_t(d)] = runtime::eval_dim(f.grid[size_t(d)], syms.data(), syms.size());
    std::lock_guard<std::mutex> lock(mutex_);
    ensure_loaded();
    cudaStream_t stream = current_stream();
    // Device pointers: tensors already on the GPU are used in place; host tensors are staged.
    std::vector<DeviceBuffer> staged;
    staged.reserve(in.size() + out.size());
    std::vector<void*> in_ptrs, out_ptrs;
    for (const Tensor& t : in) {
      if (t.nbytes() == 0 || is_device_pointer(t.data())) {
        in_ptrs.push_back(t.data());
        continue;
      }
      staged.emplace_back();
      check(cudaMalloc(&staged.back().ptr, t.nbytes()), "staging an input");
      check(cudaMemcpyAsync(staged.back().ptr, t.data(), t.nbytes(), cudaMemcpyHostToDevice, stream), "staging an input");
      in_ptrs.push_back(staged.back().ptr);
    }
    std::vector<size_t> copy_back;
    for (size_t k = 0; k < out.size(); ++k) {
      const Tensor& t = out[k];
      if (t.nbytes() == 0 || is_device_pointer(t.data())) {
        out_ptrs.push_back(t.data());
        continue;
      }
      staged.emplace_back();
      check(cudaMalloc(&staged.back().ptr, t.nbytes()), "staging an output");
      out_ptrs.push_back(staged.back().ptr);
      copy_back.push_back(k);
    }
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
      check(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_.at(f.kernel)), g, b, args.data(),
                             f.dynamic_shared_bytes, stream),
            "launching kernel '" + f.kernel + "' of function '" + f.symbol + "'");
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
  std::mutex mutex_;
  cudaLibrary_t library_ = nullptr;
  std::map<std::string, cudaKernel_t> kernels_;
  std::map<std::string, Tensor> host_constants_;
  std::map<std::string, void*> constant_ptr_;
  std::vector<void*> device_constants_;
};

runtime::DimProgram read_program(runtime::Reader& r) { return r.i64s("shape program"); }

runtime::ModulePtr load_cuda_module(std::string_view bytes) {
  runtime::Reader r(bytes, "cuda module");
  if (r.u32("magic") != kMagic) r.fail("not a cuda module (bad magic)");
  uint32_t version = r.u32("version");
  if (version != kVersion) r.fail("unsupported cuda module version " + std::to_string(version));
  std::string source = r.str("CUDA source");
  std::string cubin = r.str("cubin");
  std::vector<KernelFunction> functions(r.count("functions", 16));
  for (auto& f : functions) {
    f.symbol = r.str("function symbol");
    f.kernel = r.str("kernel name");
    for (auto* list : {&f.inputs, &f.outputs}) {
      list->resize(r.count("tensor signatures", 10));
      for (auto& t : *list) {
        auto code = DataType::Code(r.u8("dtype code"));
        int bits = r.u8("dtype bits");
        t.dtype = DataType(code, uint8_t(bits));
        if (!DataType::is_valid(t.dtype.str())) r.fail("invalid dtype in a tensor signature");
        t.shape.resize(r.count("dimensions", 8));
        for (auto& d : t.shape) d = read_program(r);
      }
    }
    f.constants.resize(r.count("constants", 8));
    for (auto& c : f.constants) c = r.str("constant name");
    f.sym_sources.resize(r.count("symbolic dimensions", 17));
    for (auto& s : f.sym_sources) {
      s.output = r.u8("dimension source") != 0;
      s.tensor = int32_t(r.i64("dimension tensor"));
      s.dim = int32_t(r.i64("dimension index"));
      const auto& list = s.output ? f.outputs : f.inputs;
      if (s.tensor < 0 || size_t(s.tensor) >= list.size() || s.dim < 0 ||
          size_t(s.dim) >= list[size_t(s.tensor)].shape.size())
        r.fail("a symbolic dimension of '" + f.symbol + "' is read from a tensor it does not have");
    }
    for (auto& g : f.grid) g = read_program(r);
    for (auto& b : f.block) {
      b = r.u32("block size");
      if (b == 0 || b > 1024) r.fail("invalid block size in '" + f.symbol + "'");
    }
    f.dynamic_shared_bytes = r.u32("shared memory size");
  }
  if (!r.at_end()) r.fail("trailing bytes");
  return std::make_shared<CudaKernelModule>(std::move(source), std::move(cubin), std::move(functions));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER("cuda", load_cuda_module);

runtime::ModulePtr make_cuda_kernel_module(std::string source, std::string cubin, std::vector<KernelFunction> functions) {
  return std::make_shared<CudaKernelModule>(std::move(source), std::move(cubin), std::move(functions));
}

std::string cuda_module_source(const runtime::RuntimeModule& module) {
  if (auto* m = dynamic_cast<const CudaKernelModule*>(&module)) return m->source();
  return "";
}

std::string cuda_module_cubin(const runtime::RuntimeModule& module) {
  if (auto* m = dynamic_cast<const CudaKernelModule*>(&module)) return m->cubin();
  return "";
}

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
