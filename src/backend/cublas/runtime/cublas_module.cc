// The "cublas" runtime module: runs each function's GEMM program (../gemm_program.h) on cuBLASLt,
// on the current stream of the VM's CUDA device, with one handle and workspace per device and
// thread (lt_context.h) and plans cached per shape (gemm_plan.h). Shapes come from the tensors
// at run time, so symbolic dimensions (M, batch) need nothing more. Named constants (a function
// partitioned with bind_constants) are uploaded once per device, at the first call there.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>

#include "../gemm_program.h"
#include "../module_format.h"
#include "gemm_plan.h"
#include "lt_check.h"
#include "partita/runtime/device_api.h"
#include "partita/runtime/module.h"

namespace partita::backend::cublas {
namespace {

bool on_gpu(const Tensor& t) { return t.device().kind == DeviceKind::kCUDA || t.device().kind == DeviceKind::kCUDAManaged; }

std::string dims_text(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

int64_t product(const std::vector<int64_t>& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

std::vector<int64_t> without_leading_ones(const std::vector<int64_t>& s) {
  size_t k = 0;
  while (k + 1 < s.size() && s[k] == 1) ++k;
  return {s.begin() + std::ptrdiff_t(k), s.end()};
}

// A tensor of a running function: its device pointer, shape and dtype.
struct Slot {
  void* ptr = nullptr;
  std::vector<int64_t> shape;
  DataType dtype;
  Tensor keep;  // an intermediate's buffer
};

class CublasModule : public runtime::RuntimeModule {
 public:
  CublasModule(std::string text, GemmProgram program) : text_(std::move(text)), program_(std::move(program)) {
    for (size_t i = 0; i < program_.functions.size(); ++i) {
      const GemmFunction& f = program_.functions[i];
      index_[f.symbol] = i;
      auto& runners = runners_.emplace_back();
      for (const GemmStep& g : f.gemms) {
        GemmTypes types{f.values[size_t(g.a)].dtype, f.values[size_t(g.b)].dtype, f.values[size_t(g.out)].dtype,
                        g.scale_a >= 0 ? f.values[size_t(g.scale_a)].dtype : DataType::Float(32)};
        runners.push_back(std::make_unique<GemmRunner>(g, types, program_.allow_tf32, program_.autotune_top_k));
      }
    }
  }
  ~CublasModule() override {
    for (auto& [device, ptrs] : device_constants_) {
      cudaSetDevice(device);
      for (auto& [name, p] : ptrs) cudaFree(p);
    }
  }

  std::string type_key() const override { return std::string(kModuleFormat.type_key); }
  DeviceKind device_kind() const override { return DeviceKind::kCUDA; }
  // Calls only enqueue on the current stream once a shape's plan exists; the VM's warm-up call
  // makes the handle, the workspace and the plans, and uploads the constants.
  bool supports_graph_capture() const override { return true; }

  runtime::PackedFunc get_function(const std::string& symbol) override {
    auto it = index_.find(symbol);
    if (it == index_.end()) return nullptr;
    size_t i = it->second;
    return [this, i](std::span<const Tensor> in, std::span<Tensor> out) { call(i, in, out); };
  }

  std::vector<std::string> function_names() const override { return runtime::symbols_of(program_.functions); }
  std::vector<std::string> const_names() const override { return runtime::constant_names_of(program_.functions); }

  void init_constants(const std::map<std::string, Tensor>& constants) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& name : const_names()) {
      auto it = constants.find(name);
      if (it == constants.end()) throw_error("KeyError", "cublas module: constant '" + name + "' was not provided");
      host_constants_[name] = it->second.device().is_host_accessible() ? it->second : it->second.to(Device::cpu());
    }
  }

  void save_to_binary(std::string& out) const override { out += runtime::write_module_sections(kModuleFormat, {text_}); }

  // The GEMM program (JSON); "plans": per function and GEMM, the cached plans and heuristic
  // queries so far.
  std::string get_source(const std::string& format) const override {
    if (format != "plans") return text_;
    std::lock_guard<std::mutex> lock(mutex_);
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < program_.functions.size(); ++i) {
      nlohmann::json steps = nlohmann::json::array();
      for (const auto& r : runners_[i]) steps.push_back({{"plans", r->plans()}, {"heuristic_queries", r->heuristic_queries()}});
      j[program_.functions[i].symbol] = steps;
    }
    return j.dump();
  }

 private:
  [[noreturn]] static void fail(const GemmFunction& f, const std::string& kind, const std::string& why) {
    throw_error(kind, "cublas function '" + f.symbol + "': " + why);
  }

  void* device_constant(const std::string& name, int device) {
    auto& ptrs = device_constants_[device];
    if (auto it = ptrs.find(name); it != ptrs.end()) return it->second;
    auto it = host_constants_.find(name);
    if (it == host_constants_.end()) throw_error("KeyError", "cublas module: constant '" + name + "' was not provided");
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, std::max<size_t>(it->second.nbytes(), 1)), "allocating constant '" + name + "'");
    ptrs[name] = p;
    cuda_check(cudaMemcpy(p, it->second.data(), it->second.nbytes(), cudaMemcpyHostToDevice),
               "uploading constant '" + name + "'");
    return p;
  }

  void call(size_t fi, std::span<const Tensor> in, std::span<Tensor> out) {
    const GemmFunction& f = program_.functions[fi];
    if (in.size() != f.inputs.size() || out.size() != f.outputs.size())
      fail(f, "ValueError", "expected " + std::to_string(f.inputs.size()) + " inputs and " +
                                std::to_string(f.outputs.size()) + " outputs, got " + std::to_string(in.size()) + " and " +
                                std::to_string(out.size()));
    int device = -1;
    auto check_tensor = [&](const Tensor& t, int v, const std::string& what) {
      const GemmValue& sig = f.values[size_t(v)];
      if (t.nbytes() != 0 && !on_gpu(t))
        fail(f, "ValueError", what + " is on " + t.device().str() + "; run it with a VM on a CUDA device");
      if (on_gpu(t)) {
        if (device >= 0 && t.device().id != device) fail(f, "ValueError", what + " is on another GPU than the rest");
        device = t.device().id;
      }
      if (!(t.dtype() == sig.dtype)) fail(f, "TypeError", what + " has dtype " + t.dtype().str() + ", expected " + sig.dtype.str());
      bool ok = t.ndim() == int(sig.shape.size());
      for (size_t d = 0; ok && d < sig.shape.size(); ++d) ok = sig.shape[d] < 0 || sig.shape[d] == t.shape()[d];
      if (!ok) fail(f, "ValueError", what + " has shape " + dims_text(t.shape()) + ", which does not fit " + dims_text(sig.shape));
    };
    for (size_t k = 0; k < in.size(); ++k) check_tensor(in[k], f.inputs[k], "input " + std::to_string(k));
    for (size_t k = 0; k < out.size(); ++k) check_tensor(out[k], f.outputs[k], "output " + std::to_string(k));
    if (device < 0) {
      cuda_check(cudaGetDevice(&device), "finding the current device");
    }
    Device dev = Device::cuda(device);
    auto stream = static_cast<cudaStream_t>(runtime::current_stream(dev));

    std::lock_guard<std::mutex> lock(mutex_);
    cuda_check(cudaSetDevice(device), "selecting cuda:" + std::to_string(device));
    LtContext& ctx = lt_context(device, size_t(program_.workspace_mib) << 20, stream);
    std::vector<Slot> slots(f.values.size());
    for (size_t k = 0; k < in.size(); ++k)
      slots[size_t(f.inputs[k])] = {const_cast<void*>(in[k].data()), in[k].shape(), in[k].dtype(), {}};
    for (const auto& [v, name] : f.constants) {
      const Tensor& host = host_constants_.count(name) ? host_constants_.at(name) : Tensor();
      if (!host_constants_.count(name)) throw_error("KeyError", "cublas module: constant '" + name + "' was not provided");
      slots[size_t(v)] = {device_constant(name, device), host.shape(), host.dtype(), {}};
    }
    std::map<int, size_t> output_of;
    for (size_t k = 0; k < out.size(); ++k) output_of.emplace(f.outputs[k], k);
    for (size_t gi = 0; gi < f.gemms.size(); ++gi) run_gemm(f, f.gemms[gi], *runners_[fi][gi], slots, out, output_of, ctx,
                                                             stream, device);
    // Outputs a GEMM wrote elsewhere (one value returned twice) are copied into place.
    for (size_t k = 0; k < out.size(); ++k) {
      const Slot& s = slots[size_t(f.outputs[k])];
      if (s.ptr != out[k].data() && out[k].nbytes())
        cuda_check(cudaMemcpyAsync(out[k].data(), s.ptr, out[k].nbytes(), cudaMemcpyDeviceToDevice, stream),
                   "copying an output");
    }
  }

  void run_gemm(const GemmFunction& f, const GemmStep& g, GemmRunner& runner, std::vector<Slot>& slots,
                std::span<Tensor> out, const std::map<int, size_t>& output_of, LtContext& ctx, cudaStream_t stream,
                int device) {
    const Slot& a = slots[size_t(g.a)];
    const Slot& b = slots[size_t(g.b)];
    std::string where = g.from.empty() ? "a GEMM" : g.from;
    size_t ra = a.shape.size(), rb = b.shape.size();
    if (ra < 2 || rb < 2) fail(f, "ValueError", where + ": an operand has rank below 2");
    int64_t m = a.shape[ra - 2], k = a.shape[ra - 1];
    int64_t kb = g.transpose_b ? b.shape[rb - 1] : b.shape[rb - 2];
    int64_t n = g.transpose_b ? b.shape[rb - 2] : b.shape[rb - 1];
    if (k != kb) fail(f, "ValueError", where + ": reduction axes differ (" + dims_text(a.shape) + " by " + dims_text(b.shape) + ")");
    // Batch dimensions, broadcast (numpy rules), right-aligned.
    std::vector<int64_t> ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
    size_t nb = std::max(ba.size(), bb.size());
    ba.insert(ba.begin(), nb - ba.size(), 1);
    bb.insert(bb.begin(), nb - bb.size(), 1);
    std::vector<int64_t> batch(nb);
    for (size_t d = 0; d < nb; ++d) {
      if (ba[d] != bb[d] && ba[d] != 1 && bb[d] != 1)
        fail(f, "ValueError", where + ": batch dimensions do not broadcast (" + dims_text(a.shape) + " by " + dims_text(b.shape) + ")");
      batch[d] = std::max(ba[d], bb[d]);
      if (ba[d] == 0 || bb[d] == 0) batch[d] = 0;
    }
    std::vector<int64_t> out_shape = batch;
    out_shape.push_back(m);
    out_shape.push_back(n);
    int64_t total_batch = product(batch, 0, nb);
    const GemmValue& sig = f.values[size_t(g.out)];
    Slot& d = slots[size_t(g.out)];
    if (auto it = output_of.find(g.out); it != output_of.end() && !d.ptr) {
      Tensor& t = out[it->second];
      if (without_leading_ones(t.shape()) != without_leading_ones(out_shape))
        fail(f, "ValueError", where + ": output has shape " + dims_text(t.shape()) + ", the product " + dims_text(out_shape));
      d = {t.data(), t.shape(), t.dtype(), {}};
    } else {
      std::vector<int64_t> shape = out_shape;
      if (sig.shape.size() > shape.size()) shape.insert(shape.begin(), sig.shape.size() - shape.size(), 1);
      Tensor t = Tensor::empty(shape, sig.dtype, Device::cuda(device));
      d = {t.data(), shape, sig.dtype, t};
    }
    GemmPointers p;
    p.d = d.ptr;
    if (g.bias >= 0) {
      const Slot& bias = slots[size_t(g.bias)];
      int64_t bias_numel = product(bias.shape, 0, bias.shape.size());
      if (g.bias_kind == BiasKind::kVector && (bias.shape.empty() || bias.shape.back() != n || bias_numel != n))
        fail(f, "ValueError", where + ": bias " + dims_text(bias.shape) + " is not a vector of " + std::to_string(n));
      if (g.bias_kind == BiasKind::kMatrix && without_leading_ones(bias.shape) != without_leading_ones(out_shape))
        fail(f, "ValueError", where + ": bias " + dims_text(bias.shape) + " is not of the product's shape " + dims_text(out_shape));
      p.bias = bias.ptr;
    }
    if (g.scale_a >= 0) {
      p.scale_a = slots[size_t(g.scale_a)].ptr;
      p.scale_b = slots[size_t(g.scale_b)].ptr;
      for (int s : {g.scale_a, g.scale_b})
        if (product(slots[size_t(s)].shape, 0, slots[size_t(s)].shape.size()) != 1)
          fail(f, "ValueError", where + ": a scale is not one element");
    }
    if (total_batch == 0 || m == 0 || n == 0) return;
    if (k == 0) fail(f, "ValueError", where + ": an empty reduction axis");
    size_t ea = size_t(a.dtype.bytes()), eb = size_t(b.dtype.bytes()), ed = size_t(sig.dtype.bytes());
    GemmShape s;
    s.n = n;
    s.k = k;
    s.device = device;
    auto align = [&](const GemmPointers& q) {
      s.align_a = pointer_alignment(q.a);
      s.align_b = pointer_alignment(q.b);
      s.align_d = pointer_alignment(q.d);
      s.align_c = g.bias_kind == BiasKind::kMatrix ? pointer_alignment(q.bias) : s.align_d;
      s.align_bias = g.bias_kind == BiasKind::kVector ? pointer_alignment(q.bias) : 256;
    };
    bool b_single = product(bb, 0, nb) == 1;
    if (b_single || ba == bb) {
      // One call: a 2-d right-hand side folds every batch of the left into M; equal batches
      // run as one strided batched product.
      s.m = b_single ? m * product(ba, 0, nb) : m;
      s.batch = b_single ? 1 : total_batch;
      p.a = a.ptr;
      p.b = b.ptr;
      align(p);
      runner.run(ctx, stream, s, p);
      return;
    }
    // Broadcast batches (beyond TVM, which refuses them): one product per batch entry, all on
    // one plan (the alignment every entry shares).
    s.m = m;
    s.batch = 1;
    std::vector<int64_t> idx(nb, 0);
    std::vector<GemmPointers> calls;
    for (int64_t e = 0; e < total_batch; ++e) {
      int64_t off_a = 0, off_b = 0;
      for (size_t dd = 0; dd < nb; ++dd) {
        off_a = off_a * ba[dd] + (ba[dd] == 1 ? 0 : idx[dd]);
        off_b = off_b * bb[dd] + (bb[dd] == 1 ? 0 : idx[dd]);
      }
      GemmPointers q = p;
      q.a = static_cast<const char*>(a.ptr) + size_t(off_a * m * k) * ea;
      q.b = static_cast<const char*>(b.ptr) + size_t(off_b * k * n) * eb;
      q.d = static_cast<char*>(d.ptr) + size_t(e * m * n) * ed;
      if (g.bias_kind == BiasKind::kMatrix) q.bias = static_cast<const char*>(p.bias) + size_t(e * m * n) * ed;
      calls.push_back(q);
      for (size_t dd = nb; dd-- > 0;) {
        if (++idx[dd] < batch[dd]) break;
        idx[dd] = 0;
      }
    }
    GemmShape common = s;
    common.align_a = common.align_b = common.align_c = common.align_d = common.align_bias = 256;
    for (const auto& q : calls) {
      align(q);
      common.align_a = std::min(common.align_a, s.align_a);
      common.align_b = std::min(common.align_b, s.align_b);
      common.align_c = std::min(common.align_c, s.align_c);
      common.align_d = std::min(common.align_d, s.align_d);
      common.align_bias = std::min(common.align_bias, s.align_bias);
    }
    for (const auto& q : calls) runner.run(ctx, stream, common, q);
  }

  std::string text_;
  GemmProgram program_;
  std::map<std::string, size_t> index_;
  std::vector<std::vector<std::unique_ptr<GemmRunner>>> runners_;
  mutable std::mutex mutex_;
  std::map<std::string, Tensor> host_constants_;
  std::map<int, std::map<std::string, void*>> device_constants_;
};

runtime::ModulePtr load_cublas_module(std::string_view bytes) {
  auto sections = runtime::read_module_sections(kModuleFormat, bytes, {"GEMM program"});
  GemmProgram program = program_from_json(sections[0]);
  return std::make_shared<CublasModule>(std::move(sections[0]), std::move(program));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(std::string(kModuleFormat.type_key), load_cublas_module);

}  // namespace partita::backend::cublas
