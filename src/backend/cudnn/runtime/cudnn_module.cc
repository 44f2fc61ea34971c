// The "cudnn" runtime module: runs the programs the codegen wrote (module_format.h) on the VM's
// CUDA device and stream. Per device, once (at load when a GPU is there, else at the first
// call): one cuDNN handle, the named constants uploaded, weights re-laid out to NHWC by the
// program's conversion nodes of constants, every node's execution plan built for its shapes and
// one workspace per plan. A call then only binds pointers and enqueues work, so it can be
// captured into a CUDA Graph.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "../module_format.h"
#include "cudnn_graphs.h"
#include "partita/runtime/device_api.h"
#include "partita/runtime/module.h"
#include "partita/runtime/module_sections.h"
#include "partita/support/error.h"

namespace partita::backend::cudnn {

namespace {

using json = nlohmann::json;

constexpr size_t kMinCudnnVersion = 90000;  // the graph API and the frontend's SDPA as used here

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw_error("RuntimeError", std::string("cudnn: ") + what + ": " + cudaGetErrorString(err));
}

void check_cudnn(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw_error("RuntimeError", std::string("cudnn: ") + what + " failed: " + cudnnGetErrorString(status));
}

/// The cuDNN library this process loaded, checked once: the backend needs cuDNN 9.
void check_cudnn_version() {
  static const std::string problem = [] {
    const size_t v = cudnnGetVersion();
    if (v >= kMinCudnnVersion) return std::string();
    return "libcudnn reports version " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100) + "; the cudnn backend needs cuDNN >= 9.0 (libcudnn.so.9)";
  }();
  if (!problem.empty()) throw_error("RuntimeError", "cudnn: " + problem);
}

struct Value {
  std::vector<int64_t> shape;
  DataType dtype;
  bool nhwc = false;
};

struct Node {
  std::string op;
  std::vector<int> in;
  int out = -1;
  json attrs;
};

struct Program {
  std::string symbol;
  std::vector<Value> values;
  std::vector<int> inputs, outputs;
  std::map<int, std::string> constants;  // value id -> constant name
  std::vector<Node> nodes;
};

std::array<int64_t, 4> dims4(const std::vector<int64_t>& s) { return {s[0], s[1], s[2], s[3]}; }

template <class T>
T get(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw_error("ValueError", "cudnn: malformed program: " + where + " has no \"" + key + "\"");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception& e) {
    throw_error("ValueError", "cudnn: malformed program: " + where + "." + key + ": " + e.what());
  }
}

/// Reads and checks one function of the program: value ids in range, known nodes with the
/// operands their kind needs, shapes that fit them.
Program read_program(const json& f) {
  Program p;
  p.symbol = get<std::string>(f, "symbol", "a function");
  const std::string where = "function " + p.symbol;
  for (const json& v : get<json>(f, "values", where)) {
    Value val;
    val.shape = get<std::vector<int64_t>>(v, "shape", where + " value");
    const std::string dt = get<std::string>(v, "dtype", where + " value");
    if (!DataType::is_valid(dt)) throw_error("ValueError", "cudnn: malformed program: " + where + ": dtype " + dt);
    val.dtype = DataType::parse(dt);
    val.nhwc = get<std::string>(v, "layout", where + " value") == "nhwc";
    for (int64_t d : val.shape)
      if (d < 0) throw_error("ValueError", "cudnn: malformed program: " + where + ": a negative dimension");
    p.values.push_back(std::move(val));
  }
  const int n = int(p.values.size());
  auto id = [&](int i, const std::string& what) {
    if (i < 0 || i >= n)
      throw_error("ValueError", "cudnn: malformed program: " + where + ": " + what + " names value " +
                                    std::to_string(i) + " of " + std::to_string(n));
    return i;
  };
  for (int i : get<std::vector<int>>(f, "inputs", where)) p.inputs.push_back(id(i, "an input"));
  for (int i : get<std::vector<int>>(f, "outputs", where)) p.outputs.push_back(id(i, "an output"));
  for (const json& c : get<json>(f, "constants", where))
    p.constants[id(get<int>(c, "value", where + " constant"), "a constant")] = get<std::string>(c, "name", where);
  for (const json& j : get<json>(f, "nodes", where)) {
    Node node;
    node.op = get<std::string>(j, "op", where + " node");
    const std::string nw = where + " node " + node.op;
    for (int i : get<std::vector<int>>(j, "in", nw)) node.in.push_back(id(i, nw));
    node.out = id(get<int>(j, "out", nw), nw);
    node.attrs = j;
    size_t want_min = 0, want_max = 0;
    if (node.op == "to_nhwc" || node.op == "to_nchw") want_min = want_max = 1;
    else if (node.op == "conv2d") want_min = 2, want_max = 4;
    else if (node.op == "attention") want_min = 3, want_max = 4;
    else throw_error("ValueError", "cudnn: malformed program: " + where + ": unknown node \"" + node.op + "\"");
    if (node.in.size() < want_min || node.in.size() > want_max)
      throw_error("ValueError", "cudnn: malformed program: " + nw + " has " + std::to_string(node.in.size()) + " operands");
    const bool conv_bias = node.op == "conv2d" && j.value("has_bias", false);
    if (node.op == "conv2d" && node.in.size() != 2 + size_t(conv_bias) + size_t(j.value("has_residual", false)))
      throw_error("ValueError", "cudnn: malformed program: " + nw + " operands disagree with has_bias / has_residual");
    for (size_t k = 0; k < node.in.size(); ++k)
      if (p.values[size_t(node.in[k])].shape.size() != 4 && !(conv_bias && k == 2))
        throw_error("ValueError", "cudnn: malformed program: " + nw + " has an operand that is not 4-d");
    p.nodes.push_back(std::move(node));
  }
  return p;
}

/// A 4-d cuDNN tensor descriptor of logical (a, b, c, d) dims, stored plainly or as NHWC.
struct TensorDesc {
  cudnnTensorDescriptor_t desc = nullptr;
  TensorDesc(const Value& v) {
    check_cudnn(cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor");
    const auto& s = v.shape;
    int n = int(s[0]), c = int(s[1]), h = int(s[2]), w = int(s[3]);
    if (v.nhwc)
      check_cudnn(cudnnSetTensor4dDescriptorEx(desc, cudnn_dtype(v.dtype), n, c, h, w, c * h * w, 1, w * c, c),
                  "cudnnSetTensor4dDescriptorEx");
    else
      check_cudnn(cudnnSetTensor4dDescriptorEx(desc, cudnn_dtype(v.dtype), n, c, h, w, c * h * w, h * w, w, 1),
                  "cudnnSetTensor4dDescriptorEx");
  }
  ~TensorDesc() {
    if (desc) cudnnDestroyTensorDescriptor(desc);
  }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

/// Everything a program needs on one device, made once.
struct ProgramState {
  std::map<int, Tensor> fixed;  // constants and what was computed from them at setup
  std::vector<std::unique_ptr<ConvPlan>> conv;  // per node (null for other kinds)
  std::vector<std::unique_ptr<AttentionPlan>> attention;
  std::vector<std::unique_ptr<TensorDesc>> src_desc, dst_desc;  // conversions
  std::vector<Tensor> workspace;  // per node, empty when it needs none
  std::vector<bool> done_at_setup;
};

struct DeviceState {
  Device device;
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;  // a handle is used by one thread at a time
  std::map<std::string, ProgramState> programs;
  ~DeviceState() {
    if (handle) cudnnDestroy(handle);
  }
};

/// (B', N', 1, Skv) rows repeated to (B', N', Sq, Skv) with 2-d copies on `stream`: the first
/// row of each (b, n) slice, then doubling the copied rows.
void expand_bias_rows(const Tensor& src, Tensor& dst, int64_t sq, cudaStream_t stream) {
  const auto& s = src.shape();
  const size_t row = size_t(s[3]) * src.dtype().bytes();
  const size_t slices = size_t(s[0] * s[1]);
  const size_t slice_pitch = row * size_t(sq);
  char* d = static_cast<char*>(dst.data());
  check_cuda(cudaMemcpy2DAsync(d, slice_pitch, src.data(), row, row, slices, cudaMemcpyDeviceToDevice, stream),
             "bias broadcast");
  for (int64_t done = 1; done < sq;) {
    const int64_t n = std::min(done, sq - done);
    check_cuda(cudaMemcpy2DAsync(d + size_t(done) * row, slice_pitch, d, slice_pitch, size_t(n) * row, slices,
                                 cudaMemcpyDeviceToDevice, stream),
               "bias broadcast");
    done += n;
  }
}

class CudnnModule : public runtime::RuntimeModule {
 public:
  explicit CudnnModule(std::string program_text) : text_(std::move(program_text)) {
    json p;
    try {
      p = json::parse(text_);
    } catch (const json::exception& e) {
      throw_error("ValueError", std::string("cudnn: malformed program: ") + e.what());
    }
    if (get<int>(p, "version", "the program") != 1)
      throw_error("ValueError", "cudnn: program version " + p["version"].dump() + " (this runtime reads 1)");
    allow_tf32_ = p.value("allow_tf32", false);
    autotune_ = p.value("autotune", false);
    autotune_top_k_ = p.value("autotune_top_k", int64_t(0));
    for (const json& f : get<json>(p, "functions", "the program")) {
      Program prog = read_program(f);
      for (const auto& [id, name] : prog.constants) const_names_.insert(name);
      programs_.push_back(std::move(prog));
    }
  }

  std::string type_key() const override { return kModuleFormat.type_key; }
  DeviceKind device_kind() const override { return DeviceKind::kCUDA; }
  bool supports_graph_capture() const override { return true; }
  std::string get_source(const std::string&) const override { return text_; }
  void save_to_binary(std::string& out) const override {
    out = runtime::write_module_sections(kModuleFormat, {text_});
  }
  std::vector<std::string> function_names() const override {
    std::vector<std::string> names;
    for (const auto& p : programs_) names.push_back(p.symbol);
    return names;
  }
  std::vector<std::string> const_names() const override { return {const_names_.begin(), const_names_.end()}; }

  void init_constants(const std::map<std::string, Tensor>& constants) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const std::string& name : const_names_) {
        auto it = constants.find(name);
        if (it == constants.end()) throw_error("KeyError", "cudnn: the constant " + name + " was not given");
        constants_[name] = it->second;
      }
      constants_given_ = true;
    }
    // Plans are built at load where a GPU is there (on the current device); elsewhere at the
    // first call.
    int count = 0;
    if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) {
      int dev = 0;
      check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
      state_for(Device::cuda(dev));
    } else {
      cudaGetLastError();  // clear the error of a machine without a GPU
    }
  }

  runtime::PackedFunc get_function(const std::string& symbol) override {
    for (const Program& p : programs_)
      if (p.symbol == symbol)
        return [this, &p](std::span<const Tensor> in, std::span<Tensor> out) { run(p, in, out); };
    return {};
  }

 private:
  DeviceState& state_for(Device device) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!constants_given_ && !const_names_.empty())
      throw_error("RuntimeError", "cudnn: the module's constants were not given (init_constants)");
    auto& slot = devices_[device.id];
    if (slot) return *slot;
    auto state = std::make_unique<DeviceState>();
    state->device = device;
    check_cuda(cudaSetDevice(device.id), "cudaSetDevice");
    check_cudnn(cudnnCreate(&state->handle), "cudnnCreate");
    for (const Program& p : programs_) setup(*state, p);
    check_cuda(cudaDeviceSynchronize(), "setting up the cudnn module");
    slot = std::move(state);
    return *slot;
  }

  void setup(DeviceState& st, const Program& p) {
    ProgramState& ps = st.programs[p.symbol];
    const size_t n = p.nodes.size();
    ps.conv.resize(n);
    ps.attention.resize(n);
    ps.src_desc.resize(n);
    ps.dst_desc.resize(n);
    ps.workspace.resize(n);
    ps.done_at_setup.assign(n, false);
    for (const auto& [id, name] : p.constants) ps.fixed[id] = constants_.at(name).to(st.device);
    check_cudnn(cudnnSetStream(st.handle, nullptr), "cudnnSetStream");
    for (size_t i = 0; i < n; ++i) {
      const Node& node = p.nodes[i];
      const Value& out = p.values[size_t(node.out)];
      if (node.op == "to_nhwc" || node.op == "to_nchw") {
        ps.src_desc[i] = std::make_unique<TensorDesc>(p.values[size_t(node.in[0])]);
        ps.dst_desc[i] = std::make_unique<TensorDesc>(out);
        if (ps.fixed.count(node.in[0])) {  // a weight: re-laid out once, here
          Tensor t = Tensor::empty(out.shape, out.dtype, st.device);
          convert(st, ps, i, ps.fixed.at(node.in[0]), t);
          ps.fixed[node.out] = t;
          ps.done_at_setup[i] = true;
        }
      } else if (node.op == "conv2d") {
        ConvSpec s;
        s.dtype = out.dtype;
        s.x = dims4(p.values[size_t(node.in[0])].shape);
        s.w = dims4(p.values[size_t(node.in[1])].shape);
        s.y = dims4(out.shape);
        const json& a = node.attrs;
        auto pair = a.at("strides").get<std::vector<int64_t>>();
        s.strides = {pair.at(0), pair.at(1)};
        pair = a.at("dilation").get<std::vector<int64_t>>();
        s.dilation = {pair.at(0), pair.at(1)};
        auto pad = a.at("padding").get<std::vector<int64_t>>();
        s.padding = {pad.at(0), pad.at(1), pad.at(2), pad.at(3)};
        s.bias = a.at("has_bias").get<bool>();
        s.residual = a.at("has_residual").get<bool>();
        s.activation = a.at("activation").get<std::string>();
        auto clip = a.at("clip").get<std::vector<double>>();
        s.clip_min = clip.at(0);
        s.clip_max = clip.at(1);
        s.allow_tf32 = allow_tf32_;
        s.autotune = autotune_;
        s.autotune_top_k = autotune_top_k_;
        ps.conv[i] = ConvPlan::build(st.handle, s);
        if (ps.conv[i]->workspace_size() > 0)
          ps.workspace[i] = Tensor::empty({ps.conv[i]->workspace_size()}, DataType::UInt(8), st.device);
      } else {  // attention
        const auto& q = p.values[size_t(node.in[0])].shape;
        const auto& k = p.values[size_t(node.in[1])].shape;
        AttentionSpec s;
        s.dtype = out.dtype;
        s.b = q[0], s.sq = q[1], s.h = q[2], s.d = q[3], s.skv = k[1];
        s.scale = node.attrs.at("scale").get<double>();
        s.causal = node.attrs.at("causal").get<std::string>();
        if (node.in.size() == 4) {
          const auto& b = p.values[size_t(node.in[3])].shape;
          s.bias = true;
          s.bias_dims = {b[0], b[1], s.sq, b[3]};  // a Sq of 1 is expanded before the call
        }
        ps.attention[i] = AttentionPlan::build(st.handle, s);
        if (ps.attention[i]->workspace_size() > 0)
          ps.workspace[i] = Tensor::empty({ps.attention[i]->workspace_size()}, DataType::UInt(8), st.device);
      }
    }
  }

  void convert(DeviceState& st, ProgramState& ps, size_t node, const Tensor& src, Tensor& dst) {
    const float one = 1.f, zero = 0.f;
    check_cudnn(cudnnTransformTensor(st.handle, &one, ps.src_desc[node]->desc, src.data(), &zero,
                                     ps.dst_desc[node]->desc, dst.data()),
                "cudnnTransformTensor");
  }

  void run(const Program& p, std::span<const Tensor> in, std::span<Tensor> out) {
    if (in.size() != p.inputs.size() || out.size() != p.outputs.size())
      throw_error("ValueError", "cudnn: " + p.symbol + " takes " + std::to_string(p.inputs.size()) + " inputs and " +
                                    std::to_string(p.outputs.size()) + " outputs, got " + std::to_string(in.size()) +
                                    " and " + std::to_string(out.size()));
    Device device = in.empty() ? out[0].device() : in[0].device();
    if (device.kind != DeviceKind::kCUDA)
      throw_error("ValueError", "cudnn: " + p.symbol + " runs on a CUDA device, but its inputs are on " +
                                    device.str());
    check_cudnn_version();
    DeviceState& st = state_for(device);
    ProgramState& ps = st.programs.at(p.symbol);
    std::map<int, Tensor> env = ps.fixed;
    for (size_t i = 0; i < in.size(); ++i) {
      const Value& v = p.values[size_t(p.inputs[i])];
      if (in[i].shape() != v.shape || !(in[i].dtype() == v.dtype) || !(in[i].device() == device))
        throw_error("ValueError", "cudnn: " + p.symbol + " input " + std::to_string(i) + " must be a " + v.dtype.str() +
                                      " tensor of its static shape on " + device.str());
      env[p.inputs[i]] = in[i];
    }
    for (size_t i = 0; i < out.size(); ++i) env[p.outputs[i]] = out[i];
    std::lock_guard<std::mutex> lock(st.mutex);
    cudaStream_t stream = static_cast<cudaStream_t>(runtime::current_stream(device));
    check_cudnn(cudnnSetStream(st.handle, stream), "cudnnSetStream");
    auto value = [&](int id) -> Tensor& {
      auto it = env.find(id);
      if (it == env.end()) {
        const Value& v = p.values[size_t(id)];
        it = env.emplace(id, Tensor::empty(v.shape, v.dtype, device)).first;
      }
      return it->second;
    };
    auto ptr = [&](const Node& n, size_t k) -> const void* { return k < n.in.size() ? value(n.in[k]).data() : nullptr; };
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      if (ps.done_at_setup[i]) continue;
      const Node& n = p.nodes[i];
      void* ws = ps.workspace[i].defined() ? ps.workspace[i].data() : nullptr;
      if (ps.conv[i]) {
        const bool bias = n.attrs.at("has_bias").get<bool>();
        const void* b = bias ? ptr(n, 2) : nullptr;
        const void* r = n.attrs.at("has_residual").get<bool>() ? ptr(n, bias ? 3 : 2) : nullptr;
        ps.conv[i]->run(st.handle, ptr(n, 0), ptr(n, 1), b, r, value(n.out).data(), ws);
      } else if (ps.attention[i]) {
        const void* bias = nullptr;
        Tensor expanded;
        if (n.in.size() == 4) {
          const Tensor& b = value(n.in[3]);
          const int64_t sq = p.values[size_t(n.in[0])].shape[1];
          if (b.shape()[2] == sq) {
            bias = b.data();
          } else {
            expanded = Tensor::empty({b.shape()[0], b.shape()[1], sq, b.shape()[3]}, b.dtype(), device);
            expand_bias_rows(b, expanded, sq, stream);
            bias = expanded.data();
          }
        }
        ps.attention[i]->run(st.handle, ptr(n, 0), ptr(n, 1), ptr(n, 2), bias, value(n.out).data(), ws);
      } else {
        convert(st, ps, i, value(n.in[0]), value(n.out));
      }
    }
  }

  std::string text_;
  bool allow_tf32_ = false;
  bool autotune_ = false;
  int64_t autotune_top_k_ = 0;
  std::vector<Program> programs_;
  std::set<std::string> const_names_;
  std::mutex mutex_;
  bool constants_given_ = false;
  std::map<std::string, Tensor> constants_;
  std::map<int, std::unique_ptr<DeviceState>> devices_;
};

runtime::ModulePtr load_cudnn(std::string_view bytes) {
  check_cudnn_version();
  auto sections = runtime::read_module_sections(kModuleFormat, bytes, {"program"});
  return std::make_shared<CudnnModule>(std::move(sections[0]));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(kModuleFormat.type_key, load_cudnn);

}  // namespace partita::backend::cudnn
