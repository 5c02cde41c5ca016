#!/usr/bin/env bash
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_run.sh tests sweep:38 sweep:39 bench
mkdir -p $OUT/f
for s in 31 32 33 34 35 36 37; do for fam in index_fill_ index_copy_; do
  timeout 60 python3 -m jitops bench --sweep --seed $s --cases 10 --reps 50 --filter $fam \
    --markdown $OUT/f/$fam$s.md > $OUT/f/$fam$s.log 2>&1; grep -E "^\| $fam " $OUT/f/$fam$s.md | head -1
done; done
cd $OUT && tar czf all.tgz *.md *.log *.txt f && find . -mindepth 1 ! -name all.tgz -delete
