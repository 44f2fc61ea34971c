// The example NPU's runtime plug-in (libpartita_runtime_example_npu.so). Unlike TVM's teaching
// stub, which only logs, the "example_npu" module computes: each composite node's operator
// calls run on the runtime's host kernels (partita/runtime/kernel.h) with the attributes the
// codegen recorded, so its results are the host VM's. The dispatch decisions TVM's stub logs
// (dispatch.h) are made at load; get_source("dispatch") returns them, and they are printed to
// stderr at every call when PARTITA_EXAMPLE_NPU_LOG is set (to anything but "0").
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <span>

#include "../module_format.h"
#include "dispatch.h"
#include "partita/runtime/kernel.h"
#include "partita/runtime/json_graph_module.h"
#include "partita/support/error.h"

namespace partita::backend::example_npu {
namespace {

using json = nlohmann::json;

struct Op {
  std::string name;
  runtime::KernelAttrs attrs;
  std::vector<int> inputs, outputs;
};

struct Node {
  std::string name;  // the composite's pattern name
  std::vector<int> inputs, outputs;
  std::vector<Op> ops;
  Dispatch dispatch;
};

struct Function : runtime::JsonGraphFunction {
  std::vector<Node> nodes;
  std::vector<int> outputs;
};

runtime::KernelAttrValue parse_attr(const Function& f, const std::string& key, const json& j) {
  const std::string kind = j.at(0).get<std::string>();
  const json& v = j.at(1);
  if (kind == "none") return std::monostate{};
  if (kind == "bool") return v.get<bool>();
  if (kind == "int") return v.get<int64_t>();
  if (kind == "float") return v.get<double>();
  if (kind == "str") return v.get<std::string>();
  if (kind == "ints") return v.get<std::vector<int64_t>>();
  if (kind == "dtype") {
    const std::string s = v.get<std::string>();
    if (s.empty()) return DataType();
    if (!DataType::is_valid(s))
      f.fail("attribute " + key + " names an unknown dtype '" + s + "'");
    return DataType::parse(s);
  }
  f.fail("attribute " + key + " has an unknown kind '" + kind + "'");
}

Function parse_function(const json& j) {
  Function f;
  f.read_common(j, kModuleFormat.type_key);
  for (const auto& n : j.at("nodes")) {
    Node node;
    node.name = n.at("name").get<std::string>();
    if (n.at("op_type").get<std::string>() != "kernel")
      f.fail("node " + node.name + " is not a kernel");
    node.inputs = f.ids(n.at("inputs"));
    node.outputs = f.ids(n.at("outputs"));
    if (node.outputs.empty()) f.fail("node " + node.name + " has no output");
    for (const auto& o : n.at("ops")) {
      Op op;
      op.name = o.at("op").get<std::string>();
      if (!runtime::find_kernel(op.name))
        f.fail("operator " + op.name + " has no host kernel");
      for (const auto& [key, value] : o.at("attrs").items())
        op.attrs.values[key] = parse_attr(f, key, value);
      op.inputs = f.ids(o.at("inputs"));
      op.outputs = f.ids(o.at("outputs"));
      node.ops.push_back(std::move(op));
    }
    node.dispatch = plan_dispatch(node.name, f.shapes[size_t(node.outputs[0])]);
    f.nodes.push_back(std::move(node));
  }
  f.outputs = f.ids(j.at("outputs"));
  if (f.outputs.empty()) f.fail("it has no output");
  return f;
}

std::string dispatch_log(const Function& f) {
  std::string s = "example_npu: " + f.symbol + ": " + std::to_string(f.nodes.size()) +
                  " operation(s); memory L0 4 KiB -> L1 SRAM 256 KiB -> L2 CMX 512 KiB -> L3 DRAM; "
                  "power mode BALANCED\n";
  for (const Node& n : f.nodes) s += "  " + describe(n.name, n.dispatch) + "\n";
  return s;
}

bool logging_enabled() {
  const char* v = std::getenv("PARTITA_EXAMPLE_NPU_LOG");
  return v && *v && std::strcmp(v, "0") != 0;
}

class ExampleNpuModule : public runtime::JsonGraphModule<Function> {
 public:
  explicit ExampleNpuModule(std::string graph)
      : JsonGraphModule(kModuleFormat, std::move(graph), parse_function) {}

  void init_constants(const std::map<std::string, Tensor>& constants) override {
    std::lock_guard<std::mutex> lock(mutex_);  // VMs sharing the module may each give them
    constants_ = constants;
  }
  /// The JSON graph, or with format "dispatch" the dispatch decisions of every function.
  std::string get_source(const std::string& format) const override {
    if (format != "dispatch") return graph_;
    std::string s;
    for (const Function& f : functions_) s += dispatch_log(f);
    return s;
  }


 private:
  void run(const Function& f, std::span<const Tensor> in, std::span<Tensor> out) const override {
    if (in.size() != f.inputs.size() || out.size() != f.outputs.size())
      f.fail("expected " + std::to_string(f.inputs.size()) + " inputs and " +
                         std::to_string(f.outputs.size()) + " outputs, got " +
                         std::to_string(in.size()) + " and " + std::to_string(out.size()));
    if (logging_enabled()) std::fprintf(stderr, "%s", dispatch_log(f).c_str());
    std::vector<Tensor> values(f.shapes.size());
    auto check = [&](int id, const Tensor& t, const std::string& what) {
      if (t.dtype() != DataType::Float(32) || t.shape() != f.shapes[size_t(id)] ||
          !t.device().is_cpu())
        f.fail(what + " is not a float32 host tensor of the compiled shape");
    };
    for (size_t i = 0; i < in.size(); ++i) {
      check(f.inputs[i], in[i], "argument " + std::to_string(i));
      values[size_t(f.inputs[i])] = in[i];
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [id, name] : f.constants) {
        auto it = constants_.find(name);
        if (it == constants_.end()) f.fail("constant '" + name + "' was not provided");
        check(id, it->second, "constant '" + name + "'");
        values[size_t(id)] = it->second;
      }
    }
    // Results computed here are written straight into the caller's outputs.
    for (size_t i = 0; i < out.size(); ++i) {
      check(f.outputs[i], out[i], "output " + std::to_string(i));
      if (!values[size_t(f.outputs[i])].defined()) values[size_t(f.outputs[i])] = out[i];
    }
    for (const Node& node : f.nodes)
      for (const Op& op : node.ops) {
        std::vector<Tensor> ins, outs;
        for (int id : op.inputs) {
          if (!values[size_t(id)].defined())
            f.fail(node.name + ": an operand is used before it is computed");
          ins.push_back(values[size_t(id)]);
        }
        for (int id : op.outputs) {
          if (!values[size_t(id)].defined())
            values[size_t(id)] = Tensor::empty(f.shapes[size_t(id)], DataType::Float(32));
          outs.push_back(values[size_t(id)]);
        }
        runtime::run_kernel(op.name, ins, op.attrs, outs);
      }
    // An output that is an input, a constant or another output's value is copied.
    for (size_t i = 0; i < out.size(); ++i) {
      const Tensor& v = values[size_t(f.outputs[i])];
      if (!v.defined()) f.fail("output " + std::to_string(i) + " is never computed");
      if (!v.same_buffer(out[i])) std::memcpy(out[i].data(), v.data(), v.nbytes());
    }
  }

  mutable std::mutex mutex_;
  std::map<std::string, Tensor> constants_;
};

runtime::ModulePtr load_example_npu(std::string_view bytes) {
  auto sections = runtime::read_module_sections(kModuleFormat, bytes, {"graph"});
  return std::make_shared<ExampleNpuModule>(std::move(sections[0]));
}

// TVM's runtime.ExampleNPUJSONRuntimeCreate makes a module from a JSON graph: the bytes of an
// "example_npu.json" module are the graph alone (the Python half uses it; a module made so
// saves itself as an "example_npu" module).
runtime::ModulePtr load_example_npu_json(std::string_view graph) {
  return std::make_shared<ExampleNpuModule>(std::string(graph));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(kModuleFormat.type_key, load_example_npu);
PARTITA_REGISTER_MODULE_LOADER(std::string(kModuleFormat.type_key) + ".json",
                               load_example_npu_json);

}  // namespace partita::backend::example_npu
