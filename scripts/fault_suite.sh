#!/usr/bin/env bash
# The fault-injection suite (issue 21), with its figures in one table:
#   ./scripts/fault_suite.sh [--long] [--fuzz-secs N]
# Builds (scripts/build.sh), then runs the fault tests (tests/faults, the `test_faults` program:
# tuners killed at random moments and resumed, concurrent tuners, a PostgreSQL restart under
# them, disk full while tuning and building, damaged libraries given to run, bench and the C
# API, broken databases, a soak of four models in one process) next to a throwaway PostgreSQL
# server (scripts/with_postgres.sh), and every fuzz target (fuzz/) for --fuzz-secs each. Prints
# each figure the tests report (their FAULT-FIGURE lines) and the fuzz inputs run; exits 1 when
# a test or a fuzz target failed.
#   --long        20 kills per database, a 30-minute soak (TESSERA_FAULT_MODE=long); ctest runs
#                 the fast mode (label `faults`) as part of the test command
#   --fuzz-secs   seconds per fuzz target (default 10; 120 with --long)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=fast fuzz_secs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --long) mode=long; shift ;;
    --fuzz-secs) fuzz_secs=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "error: unknown option '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[ -n "$fuzz_secs" ] || fuzz_secs=$([ "$mode" = long ] && echo 120 || echo 10)
if ! [[ "$fuzz_secs" =~ ^[0-9]+$ ]] || [ "$fuzz_secs" -eq 0 ]; then
  echo "error: --fuzz-secs must be a positive integer, got '$fuzz_secs'" >&2
  exit 1
fi

"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh"
build=${TESSERA_BUILD_DIR:-$root/build}
export OMP_WAIT_POLICY=passive TESSERA_FAULT_MODE=$mode
log=$build/fault_suite.log # kept: the whole output of the fault tests
with_postgres=()
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  with_postgres=("$root/scripts/with_postgres.sh")
fi

echo "== fault tests ($mode mode)"
status=0
(cd "$build" && "${with_postgres[@]}" ./test_faults --gtest_color=no) >"$log" 2>&1 || status=1
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$log" | sed 's/^/  /' || true
if [ "$status" -ne 0 ]; then
  echo "-- failures:"
  grep -B2 -A12 -E 'Failure|FAILED  \]' "$log" | head -80 || true
fi

echo "== fuzz targets ($fuzz_secs s each)"
(cd "$build" && ./fuzz_seeds fuzz_corpus "$root/../shared/models" >/dev/null)
fuzz_total=0 fuzz_failed=0
for t in onnx_import plan_loader npy_reader jsonl_import schedule_json; do
  out=$(cd "$build" && "./fuzz_$t" -max_total_time="$fuzz_secs" -seed=1 "fuzz_corpus/$t" 2>&1) \
    || { fuzz_failed=$((fuzz_failed + 1)); status=1; echo "$out" | tail -5; }
  runs=$(echo "$out" | sed -n 's/^fuzz: \([0-9]*\) inputs.*/\1/p')
  echo "  fuzz_$t: ${runs:-?} inputs"
  fuzz_total=$((fuzz_total + ${runs:-0}))
done

echo "== figures"
sed -n 's/^FAULT-FIGURE \(.*\): \(.*\)$/\1\t\2/p' "$log" |
  awk -F'\t' '{ printf "  %-56s %s\n", $1, $2 }'
printf "  %-56s %s\n" "fuzz inputs run (5 targets)" "$fuzz_total"
printf "  %-56s %s\n" "fuzz targets that failed" "$fuzz_failed"
if [ "$status" -eq 0 ]; then
  echo "fault suite: passed ($mode mode)"
else
  echo "fault suite: FAILED (the fault tests' whole output: $log)" >&2
fi
exit "$status"
