// The example backend's runtime plug-in (libpartita_runtime_example.so): the "example" module
// runs each function's adds (../module_format.h) with a plain loop. It includes nothing of the
// compiler: only the public runtime headers.
#include <array>
#include <map>
#include <span>

#include "../module_format.h"
#include "partita/runtime/json_graph_module.h"
#include "partita/support/error.h"

namespace partita::backend::example {
namespace {

using json = nlohmann::json;

struct Function : runtime::JsonGraphFunction {
  std::vector<std::array<int, 3>> adds;  // a, b, out
  int output = -1;
};

Function parse_function(const json& j) {
  Function f;
  f.read_common(j, kModuleFormat.type_key);
  for (const auto& a : j.at("adds")) {
    std::array<int, 3> add{f.id(a.at(0)), f.id(a.at(1)), f.id(a.at(2))};
    if (f.shapes[add[0]] != f.shapes[add[2]] || f.shapes[add[1]] != f.shapes[add[2]])
      f.fail("an add of operands of different shapes");
    f.adds.push_back(add);
  }
  f.output = f.id(j.at("output"));
  return f;
}

class ExampleModule : public runtime::JsonGraphModule<Function> {
 public:
  explicit ExampleModule(std::string graph)
      : JsonGraphModule(kModuleFormat, std::move(graph), parse_function) {}
  void init_constants(const std::map<std::string, Tensor>& constants) override { constants_ = constants; }

 private:
  void run(const Function& f, std::span<const Tensor> in, std::span<Tensor> out) const override {
    if (in.size() != f.inputs.size() || out.size() != 1)
      f.fail("expected " + std::to_string(f.inputs.size()) + " inputs and 1 output");
    std::vector<Tensor> values(f.shapes.size());
    auto bind = [&](int id, const Tensor& t, const std::string& what) {
      if (t.dtype() != DataType::Float(32) || t.shape() != f.shapes[size_t(id)])
        f.fail(what + " is not a float32 tensor of the compiled shape");
      values[size_t(id)] = t;
    };
    for (size_t i = 0; i < in.size(); ++i) bind(f.inputs[i], in[i], "argument " + std::to_string(i));
    for (const auto& [id, name] : f.constants) {
      auto it = constants_.find(name);
      if (it == constants_.end()) f.fail("constant '" + name + "' was not provided");
      bind(id, it->second, "constant '" + name + "'");
    }
    bind(f.output, out[0], "the output");
    for (const auto& [a, b, r] : f.adds) {
      if (!values[size_t(a)].defined() || !values[size_t(b)].defined())
        f.fail("an operand is used before it is computed");
      if (!values[size_t(r)].defined()) values[size_t(r)] = Tensor::empty(f.shapes[size_t(r)], DataType::Float(32));
      const float *x = values[size_t(a)].data_as<float>(), *y = values[size_t(b)].data_as<float>();
      float* z = values[size_t(r)].data_as<float>();
      for (int64_t i = 0, n = values[size_t(r)].numel(); i < n; ++i) z[i] = x[i] + y[i];
    }
  }

  std::map<std::string, Tensor> constants_;
};

runtime::ModulePtr load_example(std::string_view bytes) {
  auto sections = runtime::read_module_sections(kModuleFormat, bytes, {"graph"});
  return std::make_shared<ExampleModule>(std::move(sections[0]));
}

}  // namespace

PARTITA_REGISTER_MODULE_LOADER(kModuleFormat.type_key, load_example);

}  // namespace partita::backend::example
