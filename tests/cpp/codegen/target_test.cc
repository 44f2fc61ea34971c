// Target: kinds, typed options, defaults, errors, str().
#include <gtest/gtest.h>

#include "partita/codegen/target.h"
#include "partita/support/error.h"

namespace partita::codegen {
namespace {

// A kind declared here, shaped like a C-compiler backend's (no backend of the tree is assumed).
const bool cc_kind_registered = [] {
  register_target_kind({"test_cc",
                        {{"cc", TargetOptionType::String, "gcc", "the C compiler"},
                         {"cflags", TargetOptionType::StringList, std::vector<std::string>{"-O2"}, "flags"}}});
  return true;
}();

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST(Target, DefaultsAndExplicitOptions) {
  Target d("test_cc");
  EXPECT_EQ(d.get_string("cc"), "gcc");
  EXPECT_EQ(d.get_string_list("cflags"), std::vector<std::string>{"-O2"});
  EXPECT_FALSE(d.is_explicit("cc"));
  Target t("test_cc", {{"cc", "clang"}, {"cflags", std::vector<std::string>{"-O3", "-march=native"}}});
  EXPECT_EQ(t.get_string("cc"), "clang");
  EXPECT_TRUE(t.is_explicit("cc"));
  EXPECT_EQ(t.str(), "test_cc -cc=clang -cflags=-O3,-march=native");
  EXPECT_EQ(d.str(), "test_cc -cc=gcc -cflags=-O2");
  EXPECT_FALSE(t == d);
  EXPECT_TRUE(Target("test_cc", {{"cc", "gcc"}}) == d);
}

TEST(Target, UnknownKindListsKinds) {
  std::string msg = error_of([] { Target("nosuch"); });
  EXPECT_NE(msg.find("unknown target kind 'nosuch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("test_cc"), std::string::npos) << msg;
}

TEST(Target, UnknownOptionListsOptions) {
  std::string msg = error_of([] { Target("test_cc", {{"opt_level", 3}}); });
  EXPECT_NE(msg.find("no option 'opt_level'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cc, cflags"), std::string::npos) << msg;
}

TEST(Target, WrongTypeIsAnError) {
  std::string msg = error_of([] { Target("test_cc", {{"cflags", "-O2"}}); });
  EXPECT_NE(msg.find("expects a list of strings, got a string"), std::string::npos) << msg;
  msg = error_of([] { Target("test_cc").get_int("cc"); });
  EXPECT_NE(msg.find("is a string, not a int"), std::string::npos) << msg;
}

TEST(Target, RegisteredKindWithAllTypes) {
  register_target_kind({"test_kind",
                        {{"flag", TargetOptionType::Bool, true, ""},
                         {"level", TargetOptionType::Int, 2, ""},
                         {"name", TargetOptionType::String, "x y", ""}}});
  Target t("test_kind", {{"level", 7}});
  EXPECT_TRUE(t.get_bool("flag"));
  EXPECT_EQ(t.get_int("level"), 7);
  EXPECT_EQ(t.str(), "test_kind -flag=1 -level=7 -name='x y'");
  EXPECT_THROW(register_target_kind({"bad_kind", {{"n", TargetOptionType::Int, "three", ""}}}), Error);
}

}  // namespace
}  // namespace partita::codegen
