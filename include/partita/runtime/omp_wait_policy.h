// OpenMP threads of a backend's library (Debian's builds use libgomp) spin between operators unless told
// otherwise, which costs 10-100x on a shared or busy machine (docs/benchmarks.md, "OpenMP
// waiting policy"). libgomp reads OMP_WAIT_POLICY once, when it is loaded — before main — so
// a program defaults it by restarting itself with the variable set. The Python package sets it
// before loading its native module instead.
#pragma once

namespace partita::runtime {

/// Call first thing in main: unless OMP_WAIT_POLICY is already set, re-executes the program
/// with OMP_WAIT_POLICY=PASSIVE, and with a short spin before sleeping (GOMP_SPINCOUNT=3000)
/// when the policy is passive and no spin count is set: waking sleeping threads for every
/// operator costs 5-10 % on models of many short operators. Returns (and the program carries on
/// unchanged) when both were set or the restart is impossible.
/// `exe`: the program to re-execute (this one; tests pass another).
void restart_with_passive_omp_wait(char** argv, const char* exe = "/proc/self/exe");

}  // namespace partita::runtime
