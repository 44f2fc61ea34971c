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
    mod = frontend::from_onnx_bytes(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const Error&) {
    return 0;
  }
  if (!well_formed(mod)) fuzz::fail("the importer made an ill-formed module");
  return 0;
}
