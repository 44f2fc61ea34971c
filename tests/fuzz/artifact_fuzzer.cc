// The artifact loader (Executable::load) on arbitrary bytes. The checksum is recomputed over the
// input first, so mutations reach the sections' parsers instead of stopping at the checksum;
// then the loaded executable is given to a VM (which resolves kernels, symbols and devices) and
// printed. Every failure must be a partita::Error.
//
// Not fuzzed: modules whose bytes are machine code (ccompiler's shared object, "dso_library"):
// loading an artifact runs such code, so artifacts are trusted as code is; those inputs are
// skipped rather than handed to dlopen.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "partita/runtime/executable.h"
#include "partita/runtime/serialize.h"
#include "partita/runtime/vm.h"
#include "partita/support/error.h"

namespace {

bool contains(const std::string& bytes, const char* what) { return bytes.find(what) != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace partita::runtime;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (contains(bytes, "ccompiler") || contains(bytes, "dso_library")) return 0;
  if (bytes.size() >= 24) {
    uint64_t sum = fnv1a64(std::string_view(bytes).substr(0, bytes.size() - 8));
    std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  }
  try {
    std::shared_ptr<Executable> ex = Executable::load(bytes);
    (void)ex->as_text();
    VirtualMachine vm(ex);
  } catch (const partita::Error&) {
  }
  return 0;
}
