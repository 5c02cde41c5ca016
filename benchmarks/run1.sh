set -u
bash benchmarks/gpu_run.sh tests sweep:26 sweep:27 "sweepf:24:index_copy_ self complex64" bench
grep -E "passed|failed" $OUT/tests.log | tail -2
grep -E "FAILED" $OUT/tests.log | head
for s in 26 27; do grep -A 12 "Slowest cases" $OUT/sweep$s.md; done
rm -f $OUT/sweepf24.json $OUT/sweepf24.log $OUT/bench.log $OUT/build.log
