// The example backend's runtime plug-in (libpartita_runtime_example.so): the "example" module
// runs each function's adds (../module_format.h) with a plain loop. It includes nothing of the
// compiler: only the public runtime headers.
#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <span>

#include "../module_format.h"
#include "partita/runtime/module.h"
#include "partita/support/error.h"

namespace partita::backend::example {
namespace {

using json = nlohmann::json;

struct Function {
  std::string symbol;
  std::vector<std::vector<int64_t>> shapes;  // by value id
  std::vector<int> inputs;
  std::vector<std::pair<int, std::string>> constants;  // value id, name in the constant table
  std::vector<std::array<int, 3>> adds;                // a, b, out
  int output = -1;
};

[[noreturn]] void fail(const std::string& symbol, const std::string& what) {
  throw_error("ValueError", "example module, function '" + symbol + "': " + what);
}

Function parse_function(const json& j) {
  Function f;
  f.symbol = j.at("symbol").get<std::string>();
  for (const auto& v : j.at("values")) f.shapes.push_back(v.get<std::vector<int64_t>>());
  auto id = [&](const json& v) {
    int x = v.get<int>();
    if (x < 0 || size_t(x) >= f.shapes.size()) fail(f.symbol, "value id " + std::to_string(x) + " is out of range");
    return x;
  };
  for (const auto& v : j.at("inputs")) f.inputs.push_back(id(v));
  for (const auto& c : j.at("constants")) f.constants.push_back({id(c.at("value")), c.at("name").get<std::string>()});
  for (const auto& a : j.at("adds")) {
    std::array<int, 3> add{id(a.at(0)), id(a.at(1)), id(a.at(2))};
    if (f.shapes[add[0]] != f.shapes[add[2]] || f.shapes[add[1]] != f.shapes[add[2]])
      fail(f.symbol, "an add of operands of different shapes");
    f.adds.push_back(add);
  }
  f.output = id(j.at("output"));
  return f;
}

class ExampleModule : public runtime::RuntimeModule {
 public:
  explicit ExampleModule(std::string graph) : graph_(std::move(graph)) {
    try {
      const json graph = json::parse(graph_);
      for (const auto& f : graph.at("functions")) functions_.push_back(parse_function(f));
    } catch (const json::exception& e) {
      throw_error("ValueError", std::string("example module: malformed graph: ") + e.what());
    }
  }

  std::string type_key() const override { return kModuleFormat.type_key; }
  std::vector<std::string> function_names() const override {
    std::vector<std::string> out;
    for (const auto& f : functions_) out.push_back(f.symbol);
    return out;
  }
  std::vector<std::string> const_names() const override {
    std::vector<std::string> out;
    for (const auto& f : functions_)
      for (const auto& c : f.constants) out.push_back(c.second);
    return out;
  }
  void init_constants(const std::map<std::string, Tensor>& constants) override { constants_ = constants; }
  void save_to_binary(std::string& out) const override { out += runtime::write_module_sections(kModuleFormat, {graph_}); }
  std::string get_source(const std::string&) const override { return graph_; }

  runtime::PackedFunc get_function(const std::string& symbol) override {
    for (const Function& f : functions_)
      if (f.symbol == symbol)
        return [this, &f](std::span<const Tensor> in, std::span<Tensor> out) { run(f, in, out); };
    return {};
  }

 private:
  void run(const Function& f, std::span<const Tensor> in, std::span<Tensor> out) const {
    if (in.size() != f.inputs.size() || out.size() != 1)
      fail(f.symbol, "expected " + std::to_string(f.inputs.size()) + " inputs and 1 output");
    std::vector<Tensor> values(f.shapes.size());
    auto bind = [&](int id, const Tensor& t, const std::string& what) {
      if (t.dtype() != DataType::Float(32) || t.shape() != f.shapes[size_t(id)])
        fail(f.symbol, what + " is not a float32 tensor of the compiled shape");
      values[size_t(id)] = t;
    };
    for (size_t i = 0; i < in.size(); ++i) bind(f.inputs[i], in[i], "argument " + std::to_string(i));
    for (const auto& [id, name] : f.constants) {
      auto it = constants_.find(name);
      if (it == constants_.end()) fail(f.symbol, "constant '" + name + "' was not provided");
      bind(id, it->second, "constant '" + name + "'");
    }
    bind(f.output, out[0], "the output");
    for (const auto& [a, b, r] : f.adds) {
      if (!values[size_t(a)].defined() || !values[size_t(b)].defined())
        fail(f.symbol, "an operand is used before it is computed");
      if (!values[size_t(r)].defined()) values[size_t(r)] = Tensor::empty(f.shapes[size_t(r)], DataType::Float(32));
      const float *x = values[size_t(a)].data_as<float>(), *y = values[size_t(b)].data_as<float>();
      float* z = values[size_t(r)].data_as<float>();
      for (int64_t i = 0, n = values[size_t(r)].numel(); i < n; ++i) z[i] = x[i] + y[i];
    }
  }

  std::string graph_;
  std::vector<Function> functions_;
  std::map<std::string, Tensor> constants_;
};

runtime::ModulePtr load_example(std::string_view bytes) {
  auto sections = runtime::read_module_sections(kModuleFormat, bytes, {"graph"});
  return std::make_shared<ExampleModule>(std::move(sections[0]));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(kModuleFormat.type_key, load_example);

}  // namespace partita::backend::example
