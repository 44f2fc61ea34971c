// The ONNX importer on arbitrary bytes (a serialized ModelProto). Bad models must raise
// partita::Error; an imported module must be well formed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "partita/frontend/onnx.h"
#include "partita/ir/analysis.h"
#include "partita/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace partita;
  IRModule mod;
  try {
    // A lower limit on the constants the importer makes than its default (1 GiB): the limit is
    // what is tested, and filling a GiB per input would slow the fuzzer a hundredfold.
    frontend::OnnxImportOptions options;
    options.max_constant_bytes = int64_t(64) << 20;
    mod = frontend::from_onnx_bytes(std::string_view(reinterpret_cast<const char*>(data), size), options);
  } catch (const Error&) {
    return 0;
  }
  if (!well_formed(mod)) fuzz::fail("the importer made an ill-formed module");
  return 0;
}
