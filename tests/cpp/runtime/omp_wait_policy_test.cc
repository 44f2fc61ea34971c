// restart_with_passive_omp_wait: which OpenMP variables the restarted program sees, and that it
// restarts only when it set one. The restart runs a shell (instead of this test binary) that
// writes what it got to a file.
#include "partita/runtime/omp_wait_policy.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace partita::runtime {
namespace {

// What the program started by the restart printed, or nullopt when there was no restart. Runs
// in a child process, with the two variables set as given (null: unset).
std::optional<std::string> restarted_env(const char* policy, const char* spin) {
  std::string out = (std::filesystem::temp_directory_path() / ("omp_env_" + std::to_string(getpid()))).string();
  std::filesystem::remove(out);
  pid_t pid = fork();
  if (pid == 0) {
    policy ? setenv("OMP_WAIT_POLICY", policy, 1) : unsetenv("OMP_WAIT_POLICY");
    spin ? setenv("GOMP_SPINCOUNT", spin, 1) : unsetenv("GOMP_SPINCOUNT");
    std::string script = "echo \"${OMP_WAIT_POLICY-unset} ${GOMP_SPINCOUNT-unset}\" > " + out;
    char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), script.data(), nullptr};
    restart_with_passive_omp_wait(argv, "/bin/sh");
    _exit(0);  // no restart
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(out);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  std::filesystem::remove(out);
  return line;
}

TEST(OmpWaitPolicy, DefaultsToPassiveWithAShortSpin) {
  EXPECT_EQ(restarted_env(nullptr, nullptr), "PASSIVE 3000");
}

TEST(OmpWaitPolicy, KeepsWhatTheUserSet) {
  EXPECT_EQ(restarted_env("passive", nullptr), "passive 3000");  // the spin is still defaulted
  EXPECT_EQ(restarted_env(nullptr, "0"), "PASSIVE 0");
  EXPECT_EQ(restarted_env("ACTIVE", nullptr), std::nullopt) << "an active policy gets no spin count";
  EXPECT_EQ(restarted_env("PASSIVE", "100"), std::nullopt) << "both set: no restart";
}

}  // namespace
}  // namespace partita::runtime
