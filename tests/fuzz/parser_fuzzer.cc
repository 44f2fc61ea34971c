// The TVMScript parser on arbitrary text. Bad text must raise partita::Error (any other
// exception or a crash is a bug); text that parses must give a well-formed module whose printed
// form parses again and prints identically (the printer's output is a fixed point).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "partita/ir/analysis.h"
#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace partita;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  IRModule mod;
  try {
    mod = script::parse_module(text);
  } catch (const Error&) {
    return 0;
  }
  if (!well_formed(mod)) fuzz::fail("the parser accepted an ill-formed module");
  std::string printed = script::print_module(mod);
  std::string again;
  try {
    again = script::print_module(script::parse_module(printed));
  } catch (const Error& e) {
    fuzz::fail(std::string("the printed module does not parse: ") + e.what() + "\n" + printed);
  }
  if (again != printed) fuzz::fail("printing is not a fixed point:\n" + printed + "\n---\n" + again);
  return 0;
}
