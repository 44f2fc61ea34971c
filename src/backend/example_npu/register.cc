// The example NPU's record (docs/adding-a-backend.md): TVM's example_npu pattern table, its JSON
// codegen and its runtime plug-in, libpartita_runtime_example_npu.so.
#include "example_npu.h"
#include "partita/backend/registry.h"

namespace partita::backend::example_npu {

PARTITA_REGISTER_BACKEND([] {
  BackendInfo b;
  b.name = "example_npu";
  b.description =
      "TVM's example NPU of its BYOC tutorial: a JSON graph of composites, computed on the host "
      "kernels";
  b.colour = "#e09090";
  b.patterns = patterns;
  b.codegen = codegen;
  b.runtime_plugin = "example_npu";
  return b;
});

}  // namespace partita::backend::example_npu
