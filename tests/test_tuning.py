"""Tuning with no GPU: candidates, shape buckets, forced runs, and results that
persist in the cache directory and reload (in this process and another)."""

import os
import subprocess
import sys
import warnings

import pytest

import jitops
from jitops import VirtualArray as V
from jitops import _core, tuning

DEFAULT = "threads=256 unroll=4 waves=16 vector=16"


def select_report(rows=50000, n=8192, dtype="float32"):
    return jitops.explain("index_select", V([rows, 1024], dtype), 0, V([n], "int64"), arch="sm_90")[0]


def store(report, *rows):
    point = {"point": report["tuning_point"], "description": "test point"}
    tuning._store(-1, 90, [point], [{"config": c, "median_us": us} for c, us in rows])
    _core.clear_tuned()


@pytest.mark.parametrize("family", ["gather", "scatter", "elementwise", "upsample", "histogram"])
def test_candidates_are_valid_configs(family):
    candidates = _core.tuning_candidates(family)
    assert len(candidates) >= 4 and len(set(candidates)) == len(candidates)
    for c in candidates:
        assert _core.check_config(c) == c


def test_gather_candidates_include_the_default():
    assert DEFAULT in _core.tuning_candidates("gather")


@pytest.mark.parametrize("bad", ["threads=100 unroll=4 waves=16 vector=16", "threads=256 unroll=0 waves=16 vector=16",
                                 "threads=256 unroll=4 waves=16 vector=3", "fast", ""])
def test_bad_config_names_the_argument(bad):
    with pytest.raises(ValueError, match="config: expected"):
        _core.check_config(bad)


def test_unknown_family():
    with pytest.raises(ValueError, match="family: expected"):
        _core.tuning_candidates("sorting")


def test_heuristic_by_default(fresh_cache):
    r = select_report()
    assert r["config_origin"] == "heuristic" and r["config"] == DEFAULT
    assert len(r["tuning_point"]) == 16
    assert "config   threads=256" in str(r)


def test_nearby_shapes_share_a_bucket(fresh_cache):
    point = select_report()["tuning_point"]
    assert select_report(rows=40000, n=6000)["tuning_point"] == point  # same powers of two
    assert select_report(n=100)["tuning_point"] != point
    assert select_report(dtype="float16")["tuning_point"] != point
    assert select_report(rows=70000)["tuning_point"] != point  # the axis size is a bucket too


def test_fixed_kernels_say_so(fresh_cache):
    reports = jitops.explain("scatter_add_", V([100, 8], "float32"), 0, V([50, 8], "int64"), V([50, 8], "float32"),
                             deterministic=True, arch="sm_90")
    sort = [r for r in reports if r["family"] == "sort"]
    assert sort and all(r["config_origin"] == "fixed" and r["config"] is None for r in sort)


def test_forced_run_records_points(fresh_cache):
    forced = "threads=512 unroll=1 waves=4 vector=8"
    reports, points = _core._tuning_run(lambda: [select_report()], forced)
    (r,) = reports
    assert r["config"] == forced and r["config_origin"] == "forced"
    assert r["block"][0] * r["block"][1] == 512 and "unroll=1 threads=512" in r["kernel"]
    assert [p["config"] for p in points] == [forced] and points[0]["description"].startswith("gather traits=")
    assert points[0]["point"] == r["tuning_point"]
    assert select_report()["config_origin"] == "heuristic"  # nothing stays forced after the run


def test_stored_result_is_used_and_reloads_in_another_process(fresh_cache):
    report = select_report()
    store(report, ("threads=128 unroll=2 waves=4 vector=16", 10.0), (DEFAULT, 12.0))
    r = select_report()
    assert r["config_origin"] == "tuned" and r["config"] == "threads=128 unroll=2 waves=4 vector=16"
    assert r["block"][0] * r["block"][1] == 128
    assert select_report(rows=40000, n=6000)["config_origin"] == "tuned"  # the bucket's neighbours too
    code = ("import jitops; from jitops import VirtualArray as V; "
            "r = jitops.explain('index_select', V([50000, 1024], 'float32'), 0, V([8192], 'int64'), arch='sm_90')[0]; "
            "print(r['config_origin'], r['config'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, JITOPS_CACHE_DIR=str(fresh_cache)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tuned threads=128 unroll=2 waves=4 vector=16"


def test_adding_a_candidate_keeps_the_others(fresh_cache):
    report = select_report()
    store(report, ("threads=128 unroll=2 waves=4 vector=16", 10.0))
    store(report, ("threads=512 unroll=1 waves=16 vector=16", 5.0))
    assert select_report()["config"] == "threads=512 unroll=1 waves=16 vector=16"
    store(report, ("threads=256 unroll=8 waves=4 vector=16", 20.0))
    assert select_report()["config"] == "threads=512 unroll=1 waves=16 vector=16"
    path = tuning.tuning_file(-1, 90)
    lines = [line for line in open(path) if line.startswith(report["tuning_point"])]
    assert len(lines) == 3
    assert os.path.basename(path).endswith(f"-sm90-driver0-jitops{jitops.__version__}.tsv")


def test_heuristic_can_win(fresh_cache):
    report = select_report()
    store(report, ("heuristic", 9.0), ("threads=128 unroll=2 waves=4 vector=16", 10.0))
    r = select_report()
    assert r["config_origin"] == "tuned" and r["config"] == DEFAULT


def test_malformed_lines_are_skipped(fresh_cache):
    report = select_report()
    path = tuning.tuning_file(-1, 90)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("garbage\n\x00\x01\n")
        f.write(f"{report['tuning_point']}\tthreads=999 unroll=1 waves=1 vector=16\t1.0\tbad threads\n")
        f.write(f"{report['tuning_point']}\tthreads=128 unroll=1 waves=4 vector=16\tnot-a-time\tx\n")
        f.write(f"{report['tuning_point']}\tthreads=128 unroll=2 waves=4 vector=16\t7.5\tgood\n")
    _core.clear_tuned()
    assert select_report()["config"] == "threads=128 unroll=2 waves=4 vector=16"


def test_unwritable_cache_warns_once_and_keeps_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    previous = _core.cache_config()
    try:
        jitops.set_cache_dir(blocker / "cache")
        tuning._warned.discard("store")
        report = select_report()
        with pytest.warns(RuntimeWarning, match="tuning results stay in memory"):
            store(report, ("threads=128 unroll=2 waves=4 vector=16", 1.0))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            store(report, ("threads=128 unroll=2 waves=4 vector=16", 1.0))
    finally:
        jitops.set_cache_dir(previous["directory"], previous["enabled"])


def test_autotune_switch():
    assert not jitops.autotune_enabled()
    jitops.set_autotune(True)
    try:
        assert jitops.autotune_enabled()
        select_report()  # explain never tunes
    finally:
        jitops.set_autotune(False)


def test_every_family_plans_with_a_config(fresh_cache):
    cases = [
        ("histc", (V([1 << 20], "float32"),), {}),
        ("mul", (V([1 << 20], "float16"), V([1 << 20], "float16")), {}),
        ("upsample_nearest2d", (V([2, 3, 8, 8], "float32"),), {"scale_factor": 2}),
        ("index_add_", (V([100, 8], "float32"), 0, V([10], "int64"), V([10, 8], "float32")), {}),
        ("gather", (V([100, 8], "float32"), 1, V([100, 2], "int64")), {}),
    ]
    for op, args, kwargs in cases:
        for r in jitops.explain(op, *args, arch="sm_90", **kwargs):
            assert r["config_origin"] == "heuristic" and _core.check_config(r["config"]) == r["config"], op
