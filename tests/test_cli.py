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
