// The runtime half of a backend whose codegen writes a JSON graph of its functions
// (codegen::JsonGraphBuilder): the fields every such function has (its symbol, the values'
// shapes, the input value ids and the named constants), read with their ids checked, and the
// module around them (the graph text as its one section, the symbols, the constants' names).
// Header-only; a plug-in that includes it reads JSON with nlohmann/json.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "partita/runtime/module.h"
#include "partita/runtime/module_sections.h"
#include "partita/support/error.h"

namespace partita::runtime {

/// One function of a graph: a backend's own function type derives from it and reads the rest.
struct JsonGraphFunction {
  std::string module;  // "<type key> module": names it in errors
  std::string symbol;
  std::vector<std::vector<int64_t>> shapes;            // by value id
  std::vector<int> inputs;                             // value ids of the arguments
  std::vector<std::pair<int, std::string>> constants;  // value id, name in the constant table

  /// Reads symbol, values, inputs and constants of `j`, a function of a `type_key` module.
  void read_common(const nlohmann::json& j, const std::string& type_key) {
    module = type_key + " module";
    symbol = j.at("symbol").get<std::string>();
    for (const auto& v : j.at("values")) shapes.push_back(v.get<std::vector<int64_t>>());
    inputs = ids(j.at("inputs"));
    for (const auto& c : j.at("constants"))
      constants.push_back({id(c.at("value")), c.at("name").get<std::string>()});
  }
  /// Throws Error("ValueError") naming the module and the function.
  [[noreturn]] void fail(const std::string& what) const {
    throw_error("ValueError", module + ", function '" + symbol + "': " + what);
  }
  /// The value id `v`, checked to be one of the function's values.
  int id(const nlohmann::json& v) const {
    int x = v.get<int>();
    if (x < 0 || size_t(x) >= shapes.size())
      fail("value id " + std::to_string(x) + " is out of range");
    return x;
  }
  std::vector<int> ids(const nlohmann::json& list) const {
    std::vector<int> out;
    for (const auto& v : list) out.push_back(id(v));
    return out;
  }
};

/// A module of the functions (of type F, derived from JsonGraphFunction) of the graph `graph`:
/// each made by `parse` from its JSON, and called through `run`.
template <class F>
class JsonGraphModule : public RuntimeModule {
 public:
  JsonGraphModule(const ModuleFormat& format, std::string graph, F (*parse)(const nlohmann::json&))
      : format_(format), graph_(std::move(graph)) {
    try {
      const nlohmann::json parsed = nlohmann::json::parse(graph_);
      for (const auto& f : parsed.at("functions")) functions_.push_back(parse(f));
    } catch (const nlohmann::json::exception& e) {
      throw_error("ValueError",
                  std::string(format.type_key) + " module: malformed graph: " + e.what());
    }
  }

  std::string type_key() const override { return format_.type_key; }
  std::vector<std::string> function_names() const override { return symbols_of(functions_); }
  std::vector<std::string> const_names() const override { return constant_names_of(functions_); }
  void save_to_binary(std::string& out) const override {
    out += write_module_sections(format_, {graph_});
  }
  std::string get_source(const std::string&) const override { return graph_; }
  PackedFunc get_function(const std::string& symbol) override {
    for (const F& f : functions_)
      if (f.symbol == symbol)
        return [this, &f](std::span<const Tensor> in, std::span<Tensor> out) { run(f, in, out); };
    return {};
  }

 protected:
  /// Runs function `f` on the arguments `in` into the outputs `out`.
  virtual void run(const F& f, std::span<const Tensor> in, std::span<Tensor> out) const = 0;

  ModuleFormat format_;
  std::string graph_;
  std::vector<F> functions_;
};

}  // namespace partita::runtime
