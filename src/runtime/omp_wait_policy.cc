#include "partita/runtime/omp_wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace partita::runtime {

void restart_with_passive_omp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure
}

}  // namespace partita::runtime
