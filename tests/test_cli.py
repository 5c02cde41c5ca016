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
    assert src.startswith("// jitops kernel: gather unit=8 index=4 dims=0 offset=32 wrap=1")
    assert "gather_linear<" in src


def test_ptx_rejects_bad_index_dtype():
    out = subprocess.run([sys.executable, "-m", "jitops", "ptx", "gather", "--index-dtype", "int8"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "--index-dtype: expected int32 or int64 (got 'int8')" in out.stderr
