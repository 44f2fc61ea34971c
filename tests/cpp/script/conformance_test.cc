// Every expected.py of the shared conformance cases parses and prints back line for line.
#include <gtest/gtest.h>

#include <filesystem>

#include "partita/script/parser.h"
#include "partita/script/printer.h"
#include "partita/support/error.h"
#include "test_util.h"

namespace partita::script {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> case_files() {
  std::vector<fs::path> files;
  fs::path root = fs::path(PARTITA_SOURCE_DIR "/../shared/conformance/cases");
  if (!fs::exists(root)) return files;
  for (const auto& entry : fs::directory_iterator(root)) {
    for (const char* name : {"expected.py", "before.py"}) {
      fs::path p = entry.path() / name;
      if (!fs::exists(p)) continue;
      std::string text = testing::read_file(p.string());
      if (text.find("@I.ir_module") == std::string::npos) continue;  // e.g. "# build: ..."
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Conformance, CasesExist) { EXPECT_GE(case_files().size(), 11u); }

TEST(Conformance, ParsePrintRoundTrip) {
  for (const fs::path& p : case_files()) {
    SCOPED_TRACE(p.string());
    std::string text = testing::read_file(p.string());
    IRModule mod;
    try {
      mod = parse_module(text, p.string());
    } catch (const Error& e) {
      ADD_FAILURE() << "parse failed: " << e.what();
      continue;
    }
    std::string printed = print_module(mod);
    auto want = testing::normalized_lines(text);
    auto got = testing::normalized_lines(printed);
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
      if (got[i] != want[i]) {
        ADD_FAILURE() << "line " << i + 1 << " differs:\n  want: " << want[i] << "\n  got:  " << got[i];
        break;
      }
    }
    // Printing is a fixed point: parse(print(m)) prints the same again.
    EXPECT_EQ(print_module(parse_module(printed)), printed);
  }
}

}  // namespace
}  // namespace partita::script
