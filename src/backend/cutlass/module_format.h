// The bytes of a "cutlass" runtime module, written by the codegen and read by the runtime
// plug-in: sections (1) the module's generated C++ (its glue; the GEMM units it links are named
// in it), (2) the shared object nvcc made of it, (3) the function table: per line
// "<symbol>\t<number of parameters>\t<constant names, comma-separated>". A function is called as
// `int32_t <symbol>(const PtCall*)` (device_code.h: PtCall) with its parameters, then its
// constants (on the device), as inputs, on the VM's stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "partita/runtime/module_sections.h"
#include "partita/support/error.h"

namespace partita::backend::cutlass {

inline constexpr runtime::ModuleFormat kModuleFormat{"cutlass", 0x434c5450 /* "PTLC" */, 1};

/// One call of a generated function; must match `PtCall` in device_code.h's kModulePrelude.
struct PtCallAbi {
  const void* inputs;  // const PartitaTensorC*
  int32_t num_inputs;
  void* outputs;  // PartitaTensorC*
  int32_t num_outputs;
  void* stream;
  void* (*alloc)(void* ctx, size_t bytes);
  void (*release)(void* ctx, void* ptr);
  void* ctx;
  char* error;
  size_t error_size;
};
using PtFunctionAbi = int32_t (*)(const PtCallAbi*);

struct CutlassFunction {
  std::string symbol;
  int num_params = 0;
  std::vector<std::string> constants;
};

inline std::string write_function_table(const std::vector<CutlassFunction>& fs) {
  std::string out;
  for (const auto& f : fs) {
    out += f.symbol + "\t" + std::to_string(f.num_params) + "\t";
    for (size_t i = 0; i < f.constants.size(); ++i) out += (i ? "," : "") + f.constants[i];
    out += "\n";
  }
  return out;
}

inline std::vector<CutlassFunction> read_function_table(const std::string& text) {
  std::vector<CutlassFunction> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find('\t'), b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos || a == 0)
      throw_error("ValueError", "cutlass module: malformed function table line '" + line + "'");
    CutlassFunction f;
    f.symbol = line.substr(0, a);
    try {
      f.num_params = std::stoi(line.substr(a + 1, b - a - 1));
    } catch (...) {
      throw_error("ValueError", "cutlass module: malformed function table line '" + line + "'");
    }
    std::string cs = line.substr(b + 1);
    for (size_t p = 0; p < cs.size();) {
      size_t q = cs.find(',', p);
      if (q == std::string::npos) q = cs.size();
      f.constants.push_back(cs.substr(p, q - p));
      p = q + 1;
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace partita::backend::cutlass
