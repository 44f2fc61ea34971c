#!/usr/bin/env bash
# The sanitizer stage of CI (.ci/run runs `ci` after the normal build and tests):
#  asan  clang 14 with AddressSanitizer + UndefinedBehaviorSanitizer (any UB report fails) over
#        the whole tree in build-asan but the cuda backend and the benchmarks: every C++ test
#        program (ctest, which also runs each libFuzzer harness of tests/fuzz for a few seconds:
#        the libraries carry the fuzzers' coverage instrumentation, -fsanitize=fuzzer-no-link, so
#        one build serves both), then the Python tests through the instrumented extension (the
#        ASan runtime preloaded into python3).
#  tsan  clang 14 with ThreadSanitizer in build-tsan: the concurrency tests (tests/cpp/concurrency).
#
#   bash scripts/sanitize.sh [asan|tsan|all|ci]   (default all; ci is all; prints each step's time)
#   bash scripts/sanitize.sh asan-build           (only configures and builds build-asan)
#
# The cold build fits CI's budget on a 2-core machine (docs/reliability.md, "Sanitizers", has the
# measured CPU times). Leak checking is off for Python (the interpreter's own allocations are
# not ours to judge) and on for the C++ tests. ccache (shared with the normal build's cache
# directory) makes later runs rebuild only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
stage="${1:-all}"
cxx="${SANITIZE_CXX:-clang++-14}"
cc="${SANITIZE_CC:-clang-14}"
jobs="${JOBS:-$(nproc)}"
command -v "$cxx" >/dev/null || { echo "sanitize.sh: $cxx not found (scripts/sanitizer_packages.txt)" >&2; exit 2; }

# The cuda backend is left out (SANITIZE_CUDA=ON brings it in): its kernels run on the GPU
# machine, and its host half's tests run in the normal build; leaving it out saves a fifth of
# a cold sanitizer build on a small machine. cublas and cudnn go with it: their tests compile
# their graphs for the cuda target (without it they fail, "unknown target kind 'cuda'").
gpu="${SANITIZE_CUDA:-OFF}"
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx"
        -DPYTHON_EXECUTABLE=/usr/bin/python3 -DPARTITA_BUILD_BENCHMARKS=OFF
        -DPARTITA_WITH_CUDA="$gpu" -DPARTITA_WITH_CUBLAS="$gpu" -DPARTITA_WITH_CUDNN="$gpu"
        # -O1 keeps the tests' run time reasonable; line tables make the reports readable.
        -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELEASE="-O1 -gline-tables-only")
# Debian's g++ links --as-needed, clang 14 does not: without it a test program that names a
# plug-in library keeps it loaded from the start (test_backend_example then finds the plug-in
# loaded by the dynamic linker, not by the runtime), so the sanitizer builds link as the normal
# one does.
as_needed="-Wl,--as-needed"
timed() {  # label, command...
  local start=$SECONDS label="$1"; shift
  echo "== sanitize: $label"
  "$@"
  echo "== sanitize: $label took $((SECONDS - start)) s"
}

asan_stage() {
  local flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  flags+=" -Wno-unknown-warning-option"
  # The ASan runtime as a shared library in every program too (-shared-libasan, found through
  # an rpath): python3 gets it preloaded, and the programs the Python tests start inherit that
  # preload, which a statically linked runtime refuses ("incompatible ASan runtimes").
  local asan_rt
  asan_rt="$("$cxx" -print-file-name=libclang_rt.asan-x86_64.so)"
  # Shared libraries link no runtime (they use the one of the process: static in the fuzzers).
  local link="-fsanitize=address,undefined $as_needed"
  timed "configure build-asan" cmake -S . -B build-asan "${common[@]}" \
    -DCMAKE_CXX_FLAGS="$flags -fsanitize=fuzzer-no-link" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$link -shared-libasan -Wl,-rpath,$(dirname "$asan_rt")" \
    -DCMAKE_SHARED_LINKER_FLAGS="$link" >/dev/null
  timed "build build-asan" ninja -C build-asan -j"$jobs"
  [ "$stage" = asan-build ] && return
  local asan_common="strict_string_checks=1:check_initialization_order=1"
  export ASAN_OPTIONS="detect_leaks=1:$asan_common"
  export LSAN_OPTIONS="suppressions=$PWD/tests/cpp/lsan.supp"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # LeakSanitizer cannot stop a process whose OpenMP workers are running on this kind of machine
  # ("LeakSanitizer has encountered a fatal error"); one OpenMP thread keeps leak checks on.
  export OMP_NUM_THREADS=1
  timed "C++ tests under ASan + UBSan (ctest)" \
    ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs" --timeout 1800
  # python3 is not instrumented: the runtime must be loaded first, and its leak report would
  # be about the interpreter.
  timed "Python tests under ASan + UBSan (pytest)" \
    env LD_PRELOAD="$asan_rt" ASAN_OPTIONS="detect_leaks=0:$asan_common" \
    PARTITA_BUILD_DIR=build-asan PYTHONPATH=build-asan/python /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python
}

tsan_stage() {
  local flags="-fsanitize=thread -fno-omit-frame-pointer -Wno-unknown-warning-option"
  timed "configure build-tsan" cmake -S . -B build-tsan "${common[@]}" -DPARTITA_BUILD_PYTHON=OFF \
    -DPARTITA_BUILD_FUZZERS=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread $as_needed" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread $as_needed" >/dev/null
  # Only what the concurrency tests need (the libraries and the plug-ins their artifacts load;
  # partita_run_min depends on every plug-in).
  timed "build build-tsan (test_concurrency)" ninja -C build-tsan -j"$jobs" test_concurrency partita_run_min
  # One OpenMP thread: the OpenMP runtime is not instrumented, so hand-offs between its threads
  # would be reported as races; the VM's own threads are what is tested.
  # Known open races are suppressed one by one (tests/cpp/concurrency/tsan.supp says why).
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/cpp/concurrency/tsan.supp"
  export OMP_NUM_THREADS=1
  # Through ctest: every test in a process of its own, so each is the first to touch its tables.
  timed "concurrency tests under TSan" ctest --test-dir build-tsan --output-on-failure --no-tests=error -R '^Concurrency' --timeout 1800
}

case "$stage" in
  asan|asan-build) asan_stage ;;
  tsan) tsan_stage ;;
  all) asan_stage; tsan_stage ;;
  ci) asan_stage; tsan_stage ;;
  *) echo "usage: scripts/sanitize.sh [asan|asan-build|tsan|all|ci]" >&2; exit 2 ;;
esac
echo "== sanitize: $stage clean"
