// The GEMM program of a cublas module, shared by the codegen (which writes it) and the runtime
// plug-in (which runs it): per offloaded function, its tensors ("values") and the GEMMs that
// compute its results, each `out = epilogue(alpha * a @ op(b) + bias)` with
//   op(b) = b or b^T (the last two axes, `transpose_b`: the `matmul_transposed` patterns),
//   bias  = none, a vector along the last axis (cuBLASLt's BIAS epilogue) or a matrix of the
//           output's shape (a residual: cuBLASLt's C operand with beta = 1),
//   alpha = 1, or scale_a * scale_b (two one-element tensors: `matmul_transposed_multiply`),
//   epilogue = none, relu or gelu (RELU_BIAS / GELU_BIAS: cuBLASLt's gelu is the tanh form).
// Serialized as JSON (module_format.h); both directions check every field, so a corrupted
// program is an Error naming the field, never a crash.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "partita/runtime/data_type.h"
#include "partita/support/error.h"

namespace partita::backend::cublas {

enum class BiasKind { kNone, kVector, kMatrix };
enum class Epilogue { kNone, kRelu, kGelu };

struct GemmValue {
  DataType dtype;
  std::vector<int64_t> shape;  // -1 where the dimension is symbolic
};

struct GemmStep {
  int a = -1, b = -1;
  bool transpose_b = false;
  int bias = -1;
  BiasKind bias_kind = BiasKind::kNone;
  Epilogue epilogue = Epilogue::kNone;
  int scale_a = -1, scale_b = -1;
  int out = -1;
  std::string from;  // the pattern it came from (errors name it)
};

struct GemmFunction {
  std::string symbol;
  std::vector<GemmValue> values;
  std::vector<int> inputs, outputs;
  std::vector<std::pair<int, std::string>> constants;  // value id, constant name
  std::vector<GemmStep> gemms;
};

struct GemmProgram {
  bool allow_tf32 = false;
  int64_t autotune_top_k = 0;  // 0: the heuristic's first choice
  int64_t workspace_mib = 32;
  std::vector<GemmFunction> functions;
};

inline const char* bias_kind_name(BiasKind k) {
  return k == BiasKind::kVector ? "vector" : k == BiasKind::kMatrix ? "matrix" : "none";
}
inline const char* epilogue_name(Epilogue e) { return e == Epilogue::kRelu ? "relu" : e == Epilogue::kGelu ? "gelu" : "none"; }

inline nlohmann::json program_to_json(const GemmProgram& p) {
  using json = nlohmann::json;
  json j;
  j["version"] = 1;
  j["allow_tf32"] = p.allow_tf32;
  j["autotune_top_k"] = p.autotune_top_k;
  j["workspace_mib"] = p.workspace_mib;
  j["functions"] = json::array();
  for (const auto& f : p.functions) {
    json jf;
    jf["symbol"] = f.symbol;
    jf["values"] = json::array();
    for (const auto& v : f.values) jf["values"].push_back({{"dtype", v.dtype.str()}, {"shape", v.shape}});
    jf["inputs"] = f.inputs;
    jf["outputs"] = f.outputs;
    jf["constants"] = json::array();
    for (const auto& [id, name] : f.constants) jf["constants"].push_back({{"value", id}, {"name", name}});
    jf["gemms"] = json::array();
    for (const auto& g : f.gemms)
      jf["gemms"].push_back({{"a", g.a}, {"b", g.b}, {"transpose_b", g.transpose_b}, {"bias", g.bias},
                             {"bias_kind", bias_kind_name(g.bias_kind)}, {"epilogue", epilogue_name(g.epilogue)},
                             {"scale_a", g.scale_a}, {"scale_b", g.scale_b}, {"out", g.out}, {"from", g.from}});
    j["functions"].push_back(std::move(jf));
  }
  return j;
}

namespace detail {

[[noreturn]] inline void bad_program(const std::string& what) {
  throw_error("ValueError", "cublas module: malformed GEMM program: " + what);
}

template <class T>
T field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) bad_program(where + " has no '" + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    bad_program(where + "'s '" + key + "' has the wrong type");
  }
}

}  // namespace detail

/// Reads and checks a program: every value id in range, every GEMM reading only inputs,
/// constants and earlier results.
inline GemmProgram program_from_json(const std::string& text) {
  using detail::bad_program;
  using detail::field;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    bad_program(std::string("not JSON (") + e.what() + ")");
  }
  if (field<int>(j, "version", "the program") != 1) bad_program("unknown version");
  GemmProgram p;
  p.allow_tf32 = field<bool>(j, "allow_tf32", "the program");
  p.autotune_top_k = field<int64_t>(j, "autotune_top_k", "the program");
  p.workspace_mib = field<int64_t>(j, "workspace_mib", "the program");
  if (p.autotune_top_k < 0 || p.workspace_mib < 0 || p.workspace_mib > 4096) bad_program("options out of range");
  auto jfs = field<nlohmann::json>(j, "functions", "the program");
  if (!jfs.is_array()) bad_program("'functions' is not a list");
  for (const auto& jf : jfs) {
    GemmFunction f;
    f.symbol = field<std::string>(jf, "symbol", "a function");
    std::string where = "function '" + f.symbol + "'";
    for (const auto& jv : field<nlohmann::json>(jf, "values", where)) {
      GemmValue v;
      try {
        v.dtype = DataType::parse(field<std::string>(jv, "dtype", where + "'s value"));
      } catch (const Error&) {
        bad_program(where + " has a value of unknown dtype");
      }
      v.shape = field<std::vector<int64_t>>(jv, "shape", where + "'s value");
      for (int64_t d : v.shape)
        if (d < -1) bad_program(where + " has a value with a negative dimension");
      f.values.push_back(std::move(v));
    }
    int n = int(f.values.size());
    std::vector<bool> ready(size_t(n), false);
    auto id = [&](int v, const char* what, bool may_be_none) {
      if (may_be_none && v == -1) return;
      if (v < 0 || v >= n) bad_program(where + ": " + what + " " + std::to_string(v) + " is not a value");
      if (!ready[size_t(v)]) bad_program(where + ": " + what + " " + std::to_string(v) + " is read before it is computed");
    };
    f.inputs = field<std::vector<int>>(jf, "inputs", where);
    for (int v : f.inputs) {
      if (v < 0 || v >= n) bad_program(where + ": input " + std::to_string(v) + " is not a value");
      ready[size_t(v)] = true;
    }
    for (const auto& jc : field<nlohmann::json>(jf, "constants", where)) {
      int v = field<int>(jc, "value", where + "'s constant");
      if (v < 0 || v >= n) bad_program(where + ": constant value " + std::to_string(v) + " is not a value");
      ready[size_t(v)] = true;
      f.constants.emplace_back(v, field<std::string>(jc, "name", where + "'s constant"));
    }
    for (const auto& jg : field<nlohmann::json>(jf, "gemms", where)) {
      GemmStep g;
      g.a = field<int>(jg, "a", where + "'s GEMM");
      g.b = field<int>(jg, "b", where + "'s GEMM");
      g.transpose_b = field<bool>(jg, "transpose_b", where + "'s GEMM");
      g.bias = field<int>(jg, "bias", where + "'s GEMM");
      std::string bk = field<std::string>(jg, "bias_kind", where + "'s GEMM");
      g.bias_kind = bk == "vector" ? BiasKind::kVector : bk == "matrix" ? BiasKind::kMatrix : BiasKind::kNone;
      if (bk != "none" && g.bias_kind == BiasKind::kNone) bad_program(where + ": unknown bias_kind '" + bk + "'");
      std::string ep = field<std::string>(jg, "epilogue", where + "'s GEMM");
      g.epilogue = ep == "relu" ? Epilogue::kRelu : ep == "gelu" ? Epilogue::kGelu : Epilogue::kNone;
      if (ep != "none" && g.epilogue == Epilogue::kNone) bad_program(where + ": unknown epilogue '" + ep + "'");
      g.scale_a = field<int>(jg, "scale_a", where + "'s GEMM");
      g.scale_b = field<int>(jg, "scale_b", where + "'s GEMM");
      g.out = field<int>(jg, "out", where + "'s GEMM");
      g.from = field<std::string>(jg, "from", where + "'s GEMM");
      id(g.a, "operand", false);
      id(g.b, "operand", false);
      id(g.bias, "bias", true);
      id(g.scale_a, "scale", true);
      id(g.scale_b, "scale", true);
      if ((g.bias == -1) != (g.bias_kind == BiasKind::kNone)) bad_program(where + ": bias and bias_kind disagree");
      if ((g.scale_a == -1) != (g.scale_b == -1)) bad_program(where + ": a GEMM has one scale of two");
      if (g.out < 0 || g.out >= n || ready[size_t(g.out)]) bad_program(where + ": a GEMM's result is not a new value");
      ready[size_t(g.out)] = true;
      f.gemms.push_back(std::move(g));
    }
    f.outputs = field<std::vector<int>>(jf, "outputs", where);
    if (f.outputs.empty()) bad_program(where + " has no outputs");
    for (int v : f.outputs) id(v, "output", false);
    p.functions.push_back(std::move(f));
  }
  return p;
}

}  // namespace partita::backend::cublas
