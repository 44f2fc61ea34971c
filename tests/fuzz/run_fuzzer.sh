#!/usr/bin/env bash
# Runs one libFuzzer harness for a while: new inputs go to the work corpus (created), the seeds
# are read only; a crash leaves its input in the work corpus' folder as crash-* and fails.
#
#   run_fuzzer.sh <harness> <seconds> <work corpus> <seed corpus>
set -euo pipefail
harness="$1" seconds="$2" work="$3" seeds="$4"
mkdir -p "$work"
# -timeout: one input taking longer is a bug (a hang); -rss_limit_mb: so is unbounded memory.
exec "$harness" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=3072 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$work/" "$work" "$seeds"
