// A module loader whose own parser throws something else than partita::Error on malformed bytes
// (nlohmann::json's out_of_range in the dnnl and cblas plug-ins, found by the artifact fuzzer)
// gives an Error naming the module type, never an uncaught exception.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

#include "partita/runtime/module.h"
#include "partita/support/error.h"

using namespace partita;
using namespace partita::runtime;

TEST(ModuleLoaderErrors, ForeignExceptionsBecomeErrorsNamingTheType) {
  register_module_loader("test_throws_out_of_range", [](std::string_view) -> ModulePtr {
    throw std::out_of_range("key 'symbol' not found");
  });
  register_module_loader("test_throws_bad_alloc", [](std::string_view) -> ModulePtr { throw std::bad_alloc(); });
  try {
    load_module_from_binary("test_throws_out_of_range", "{}");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_EQ(e.message(), "runtime module of type 'test_throws_out_of_range' is malformed: key 'symbol' not found");
  }
  try {
    load_module_from_binary("test_throws_bad_alloc", "");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "runtime module of type 'test_throws_bad_alloc': out of memory while loading it");
  }
}
