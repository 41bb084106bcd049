#!/usr/bin/env bash
# Runs every fuzz target of a fuzz build for SECONDS each, starting from the committed
# seeds (fuzz/corpus/<name>/, never modified: new inputs go to BUILD/fuzz-work/<name>/).
# Exits non-zero when a target finds a crash, a leak, a split difference or a hang; the
# input is left in BUILD/fuzz-artifacts/ (turn it into a regression test, then a seed).
#   fuzz/run.sh BUILD SECONDS
set -euo pipefail
build=${1:?usage: fuzz/run.sh BUILD SECONDS}
seconds=${2:-20}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$build/fuzz-artifacts"
status=0
for bin in "$build"/fuzz/*_fuzz; do
  name=$(basename "$bin" _fuzz)
  work="$build/fuzz-work/$name"
  mkdir -p "$work"
  seeds="$src/corpus/$name"
  [ -d "$seeds" ] || seeds=""
  echo "fuzz: $name for ${seconds}s" >&2
  if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$name-" \
       "$work" $seeds >"$build/fuzz-$name.log" 2>&1; then
    echo "fuzz: $name FAILED (log: $build/fuzz-$name.log)" >&2
    tail -n 40 "$build/fuzz-$name.log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$build/fuzz-$name.log" | \
      sed "s/^/fuzz: $name /" >&2 || true
  fi
done
exit $status
