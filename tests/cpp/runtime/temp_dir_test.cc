// TempDir: a fresh private directory per object, removed with what it holds.
#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>

#include "partita/support/error.h"
#include "partita/support/temp_dir.h"

namespace partita {
namespace {

TEST(TempDir, FreshPrivateAndRemovedWithItsFiles) {
  std::filesystem::path kept;
  {
    TempDir a("partita_test_", "test"), b("partita_test_", "test");
    EXPECT_NE(a.path(), b.path());
    ASSERT_TRUE(std::filesystem::is_directory(a.path()));
    EXPECT_EQ(a.path().filename().string().rfind("partita_test_", 0), 0u);
    struct stat st {};
    ASSERT_EQ(stat(a.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);  // nobody else reads the sources and logs put there
    std::filesystem::create_directories(a.path() / "sub");
    std::ofstream(a.path() / "sub" / "f.txt") << "x";
    kept = a.path();
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
}

TEST(TempDir, AnUncreatableDirectoryNamesItsOwner) {
  try {
    make_temp_dir("no/such/folder/x", "ccompiler");
    ADD_FAILURE() << "made a directory under a missing folder";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("ccompiler: cannot create a temporary directory"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace partita
