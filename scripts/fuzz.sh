#!/usr/bin/env bash
# Runs the libFuzzer harnesses of tests/fuzz for a long time (ctest runs each for seconds only):
#
#   bash scripts/fuzz.sh [seconds per harness] [harness...]   (default 3600 s; all harnesses:
#                                                              parser onnx artifact vm_inputs)
#
# Uses build-asan (ASan + UBSan, coverage-instrumented libraries), configured and built by
# `scripts/sanitize.sh asan-build` when missing. Harnesses run one after the other at low
# priority (FUZZ_PARALLEL=n runs n at once). Each grows its corpus in
# build-asan/fuzz/corpus/<name> from the seeds in tests/fuzz/corpus/<name>; its log is
# build-asan/fuzz/<name>.log, and a crash leaves build-asan/fuzz/corpus/<name>/crash-<hash>
# (copy it into tests/fuzz/corpus/<name>/ with its regression test once fixed). Prints each
# harness's executions, coverage and outcome at the end (docs/reliability.md records them).
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-3600}"
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(parser onnx artifact vm_inputs)
if [ ! -f build-asan/build.ninja ]; then bash scripts/sanitize.sh asan-build || exit 1; fi
targets=()
for n in "${names[@]}"; do targets+=("fuzz_$n"); done
ninja -C build-asan "${targets[@]}" || exit 1
export ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

run_one() {
  local n="$1"
  nice -n 10 bash tests/fuzz/run_fuzzer.sh "build-asan/fuzz/fuzz_$n" "$seconds" "build-asan/fuzz/corpus/$n" \
    "tests/fuzz/corpus/$n" > "build-asan/fuzz/$n.log" 2>&1
  echo "$?" > "build-asan/fuzz/$n.status"
}
parallel="${FUZZ_PARALLEL:-1}"
for n in "${names[@]}"; do
  run_one "$n" &
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n; done
done
wait

fail=0
printf '%-10s %12s %8s %8s %8s  %s\n' harness executions exec/s cov ft outcome
for n in "${names[@]}"; do
  log="build-asan/fuzz/$n.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  status=$(cat "build-asan/fuzz/$n.status")
  outcome="no crash"
  if [ "$status" != 0 ]; then
    outcome="FAILED: $(grep -m1 -E 'ERROR: |fuzz invariant broken|deadly signal|Test unit written' "$log")"
    fail=1
  fi
  printf '%-10s %12s %8s %8s %8s  %s\n' "$n" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$outcome"
done
exit $fail
