#!/usr/bin/env bash
# Two builds timed on the same sweep cases in one device call, alternated: the old one from a `git archive`
# of the base commit, installed beside the working tree's (PYTHONPATH picks it), each timed by
# case_times_probe.py on the cases named in a JSON list, then compared. On this machine:
#   git archive BASE -o old_src.tar        (ignored; pass it with the run's carry: ["old_src.tar"])
#   python3 -c '...'  > benchmarks/probes/ab_cases.json   (["SEED NAME", ...], drawn with the new plans)
# On the device: FAM=scatter_add_,index_add_ FIRST=100 LAST=143 R=2 bash benchmarks/probes/ab_builds.sh
# R rounds (old then new each); T seconds a pass. Old against old, the noise, prints when R >= 2.
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
P=benchmarks/probes/case_times_probe.py
ONLY=${ONLY:-benchmarks/probes/ab_cases.json}
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/machine.txt"
t0=$(date +%s)
rm -rf /tmp/old /tmp/oldpkg && mkdir -p /tmp/old && tar -xf old_src.tar -C /tmp/old
(cd /tmp/old && python3 -m pip install --no-build-isolation --no-deps -q --target /tmp/oldpkg .) >"$OUT/build_old.log" 2>&1 \
  || { tail "$OUT/build_old.log"; exit 1; }
python3 -m pip install --no-build-isolation -q . >"$OUT/build_new.log" 2>&1 || { tail "$OUT/build_new.log"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
for r in $(seq 1 "${R:-2}"); do
  PYTHONPATH=/tmp/oldpkg timeout "${T:-150}" python3 $P "${FIRST:-100}" "${LAST:-143}" "$FAM" x "$OUT/old$r.json" \
    --only "$ONLY" >"$OUT/old$r.log" 2>&1
  timeout "${T:-150}" python3 $P "${FIRST:-100}" "${LAST:-143}" "$FAM" x "$OUT/new$r.json" --only "$ONLY" \
    >"$OUT/new$r.log" 2>&1
  echo "round $r done at $(( $(date +%s) - t0 )) s"
done
python3 $P --compare "$OUT/old1.json" "$OUT/new1.json" | tail -1
[ -f "$OUT/new2.json" ] && python3 $P --compare "$OUT/old2.json" "$OUT/new2.json" | tail -1
[ -f "$OUT/old2.json" ] && python3 $P --compare "$OUT/old1.json" "$OUT/old2.json" | tail -1
rm -f "$OUT"/*2.log
