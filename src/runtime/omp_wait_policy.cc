#include "partita/runtime/omp_wait_policy.h"

#include <strings.h>
#include <unistd.h>

#include <cstdlib>

namespace partita::runtime {

// Spin iterations before a passive thread sleeps: long enough to cover the gap between two
// operators of a model, short enough not to hold a core another process needs (transformer,
// mobilenet_v2: 5-10 % faster than sleeping at once; docs/benchmarks.md).
constexpr const char* kPassiveSpinCount = "3000";

void restart_with_passive_omp_wait(char** argv, const char* exe) {
  bool changed = false;
  if (!std::getenv("OMP_WAIT_POLICY")) {
    if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
    changed = true;
  }
  if (strcasecmp(std::getenv("OMP_WAIT_POLICY"), "passive") == 0 && !std::getenv("GOMP_SPINCOUNT")) {
    if (setenv("GOMP_SPINCOUNT", kPassiveSpinCount, 1) != 0) return;
    changed = true;
  }
  if (changed) execv(exe, argv);  // returns only on failure
}

}  // namespace partita::runtime
