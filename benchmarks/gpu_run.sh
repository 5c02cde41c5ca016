#!/usr/bin/env bash
# One device-machine call: build, then the steps named on the command line, each logged under $OUT.
#   bash benchmarks/gpu_run.sh tests sweep:11 sweep:12 bench
# Steps: tests (the GPU suite, -n 8, timed), sweep:SEED (10 cases a family), bench (the public table,
# training and per-call tables), benchf:FILTER (cases matching FILTER, per-call tables, no training),
# sweepf:SEED:FILTER (one seed's cases matching FILTER), pytest:ARGS (any pytest selection).
# Each step has its own time limit so the call ends inside the device's 10 minutes with its logs.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git rev-parse HEAD 2>/dev/null; } \
  | tee "$OUT/machine.txt"
start=$(date +%s)
python3 -m pip install --no-build-isolation -q . >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
for step in "$@"; do
  t0=$(date +%s)
  case "$step" in
    tests)
      timeout 420 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider --durations=60 tests >"$OUT/tests.log" 2>&1; rc=$?
      tail -4 "$OUT/tests.log" ;;
    pytest:*)
      timeout 300 python3 -m pytest -q -p no:cacheprovider ${step#pytest:} >>"$OUT/pytest.log" 2>&1; rc=$?
      tail -4 "$OUT/pytest.log" ;;
    sweep:*)
      seed=${step#sweep:}
      timeout 300 python3 -m jitops bench --sweep --seed "$seed" --cases 10 --reps 50 \
        --out "$OUT/sweep$seed.json" --markdown "$OUT/sweep$seed.md" >"$OUT/sweep$seed.log" 2>&1; rc=$?
      grep -E "^\| (all|family)" "$OUT/sweep$seed.md" ;;
    sweepf:*)  # sweepf:SEED:FILTER: that seed's cases whose name holds FILTER
      rest=${step#sweepf:}; seed=${rest%%:*}; filter=${rest#*:}
      timeout 300 python3 -m jitops bench --sweep --seed "$seed" --cases 10 --reps 50 --filter "$filter" \
        --out "$OUT/sweepf$seed.json" --markdown "$OUT/sweepf$seed.md" >"$OUT/sweepf$seed.log" 2>&1; rc=$?
      grep -E "^\| (all|family)" "$OUT/sweepf$seed.md"; grep -E "^\| $filter" "$OUT/sweepf$seed.md" | head -12 ;;
    benchf:*)  # the bench's cases whose name holds FILTER, with the per-call tables, no training steps
      timeout 300 python3 -m jitops bench --filter "${step#benchf:}" --no-training --out "$OUT/benchf.json" \
        --markdown "$OUT/benchf.md" >"$OUT/benchf.log" 2>&1; rc=$?
      tail -12 "$OUT/benchf.log" ;;
    bench)
      timeout 420 python3 -m jitops bench --out "$OUT/bench.json" --markdown "$OUT/bench.md" \
        >"$OUT/bench.log" 2>&1; rc=$?
      tail -3 "$OUT/bench.log" ;;
    *) echo "unknown step $step"; rc=2 ;;
  esac
  echo "$step: exit $rc in $(( $(date +%s) - t0 )) s"
done
