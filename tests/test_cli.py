import subprocess
import sys


def jitops_cli(*args):
    out = subprocess.run([sys.executable, "-m", "jitops", *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_ptx_for_sm90():
    ptx = jitops_cli("ptx", "index_select", "--dtype", "float16", "--index-dtype", "int64", "--dims", "2",
                     "--arch", "sm_90")
    assert ".target sm_90" in ptx
    assert ".entry jitops_kernel" in ptx


def test_ptx_source():
    src = jitops_cli("ptx", "take", "--dtype", "float64", "--index-dtype", "int32", "--dims", "5", "--source")
    assert src.startswith("// jitops kernel: gather unit=8 index=4 dims=5 offset=32 wrap=1")
    assert "gather_linear<" in src and ", 5, false," in src
    src = jitops_cli("ptx", "take", "--dtype", "float64", "--index-dtype", "int32", "--dims", "7", "--source")
    assert src.startswith("// jitops kernel: gather unit=8 index=4 dims=0 offset=32 wrap=1")  # generic
    assert ", 16, true," in src


def test_ptx_rejects_bad_index_dtype():
    out = subprocess.run([sys.executable, "-m", "jitops", "ptx", "gather", "--index-dtype", "int8"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "--index-dtype: expected int32 or int64 (got 'int8')" in out.stderr


def test_nvrtc_not_found_lists_where_it_looked(tmp_path):
    code = (
        "import jitops\n"
        "from jitops import VirtualArray as V\n"
        "try:\n"
        "    jitops.explain('index_select', V([9, 3], 'float32'), 0, V([2], 'int64'), arch='sm_90')\n"
        "except jitops.CudaUnavailableError as e:\n"
        "    print('RAISED', e)\n"
    )
    env = dict(__import__("os").environ, JITOPS_NVRTC_DIR=str(tmp_path / "nowhere"), JITOPS_CACHE="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "RAISED jitops could not load NVRTC" in out.stdout
    assert str(tmp_path / "nowhere" / "libnvrtc.so.13") + ": no such file" in out.stdout


def _fake_report():
    row = {"case": "mul f32", "index_dtype": "-", "correct": True, "min_bytes": 4e6, "jitops_us": 10.0,
           "torch_us": 12.0, "cupy_us": 15.0, "cupy_correct": True, "speedup": 1.2, "jitops_gbps": 400.0,
           "copy_us": 9.0, "copy_share": 0.9, "floor_us": 1.0, "compile_ms": {"elementwise k": 30.0},
           "tuned_config": "threads=128 unroll=1 waves=4 vector=16", "tune_default_us": 10.0, "tune_best_us": 8.0,
           "tuned_us": 8.1}
    checked = dict(row, case="index_select", index_dtype="int32", checks_async_us=10.2, checks_off_us=10.0,
                   checks_cost=0.02)
    return {"gpu": "Test GPU", "torch": "2.x", "date": "today", "copy_bandwidth_Bps": 4e12,
            "launch_references": {"empty_kernel_us": 3.0, "small_copy_us": 4.0},
            "cases": [row, dict(row, cupy_us=None), checked]}


def test_bench_markdown_has_cupy_and_tuning_columns():
    from jitops.bench.report import markdown

    text = markdown(_fake_report())
    assert "| CuPy us |" in text and "| 15.0 |" in text and "| - |" in text
    assert "| mul f32 | - | 10.0 | 8.0 | 1.25x | threads=128 unroll=1 waves=4 vector=16 | 8.1 |" in text
    assert "median 30 ms" in text
    assert "worst +2.0%" in text and "| index_select | int32 | 10.2 | 10.0 | +2.0% |" in text


def test_bench_plot(tmp_path):
    import pytest

    pytest.importorskip("matplotlib")
    from jitops.bench.report import plot

    assert plot(_fake_report(), tmp_path / "chart.png") and (tmp_path / "chart.png").stat().st_size > 1000


def test_bench_without_gpu_says_so_and_fails():
    import pytest

    import jitops

    if jitops.is_available():
        pytest.skip("a GPU is present: the no-GPU path is not taken")
    out = subprocess.run([sys.executable, "-m", "jitops", "bench", "--no-jit-costs"], capture_output=True, text=True)
    assert out.returncode != 0 and "no CUDA GPU" in out.stderr
