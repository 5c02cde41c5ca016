#!/usr/bin/env bash
# One build, the sweep cases named in a JSON list timed under several environments, alternated, into one
# JSON file: for a planner choice that a probe-only environment variable switches (a temporary hook in
# the working tree, never committed), where ab_builds.sh would need two builds. On the device:
#   VARS="off=X=0 on=JITOPS_PROBE_SOMETHING=1" FAM=gather FIRST=100 LAST=704 bash benchmarks/probes/env_variants.sh
# Writes $OUT/variants.json: {"NAME ROUND": {"SEED CASE": [jitops_us, torch_us]}}; R rounds (default 2).
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/machine.txt"
t0=$(date +%s)
python3 -m pip install --no-build-isolation -q . >/tmp/env_variants_build.log 2>&1 \
  || { tail /tmp/env_variants_build.log; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
P=benchmarks/probes/case_times_probe.py
ONLY=${ONLY:-benchmarks/probes/ab_cases.json}
mkdir -p /tmp/env_variants
for r in $(seq 1 "${R:-2}"); do
  for v in $VARS; do
    name=${v%%=*}
    env "${v#*=}" timeout "${T:-150}" python3 $P "${FIRST:-100}" "${LAST:-704}" "${FAM:-gather}" x \
      "/tmp/env_variants/$name $r.json" --only "$ONLY" >"/tmp/env_variants/$name $r.log" 2>&1
    echo "$name round $r done at $(( $(date +%s) - t0 )) s"
  done
done
python3 - "$OUT/variants.json" <<'PY'
import glob, json, os, sys
runs = {os.path.basename(f)[:-5]: json.load(open(f)) for f in glob.glob("/tmp/env_variants/*.json")}
json.dump(runs, open(sys.argv[1], "w"), indent=1)
PY
