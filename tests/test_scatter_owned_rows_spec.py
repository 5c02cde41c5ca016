"""index_add_ through self's rows in shared memory (runtime/ops/scatter_owned_rows.cpp), planned for sm_90
with no GPU: the rule's conditions one at a time (self dense along the indexed dim, at least a row's length
of terms and 16, 4096 rows, 2^20 terms, elements of 4 or 8 bytes, rows of 16 bytes to 3 KB), how src is
staged, and the knob."""

import pytest

import jitops
from jitops import VirtualArray as V
from test_scatter_tile_spec import stored


def plan(self, dim, terms, src, dtype="float32"):
    (r,) = jitops.explain("index_add_", self, dim, V([terms], "int64"), src, arch="sm_90")
    return r


def owned_rows(rows, length, terms, dtype="float32", src_order=(0, 1)):
    src = stored([rows, terms], src_order, dtype)
    return plan(V([rows, length], dtype), 1, terms, src)["spec"]


@pytest.fixture
def knob():
    yield jitops._core._set_owned_rows
    jitops._core._set_owned_rows(-1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_many_terms_into_rows_along_the_indexed_dim(dtype):
    spec = owned_rows(4096, 300, 400, dtype)
    assert spec["owned"] == 3 and spec["row_warps"] == 8, spec  # src dense along the terms
    r = plan(V([4096, 300], dtype), 1, 400, stored([4096, 400], (0, 1), dtype))
    assert r["regime"] == "owned rows in shared memory" and r["block"] == (256, 1, 1)
    assert r["grid"] == (4096 // 32, 1, 1)
    element = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long"}[dtype]
    assert f"scatter_owned_rows<{element}, long long, 2, false, false, 1, 8, true>" in r["source"], r["source"]


def test_src_stored_along_the_rows_is_staged_along_them():
    assert owned_rows(4096, 300, 400, src_order=(1, 0))["owned"] == 2


def test_a_transposed_self_with_the_indexed_dim_innermost():
    """Seed 9111's layout: self (L x owners) stored transposed, the index along dim 0."""
    self = stored([128, 65536], (1, 0), "int32")
    src = stored([130, 65536], (1, 0), "int32")
    assert plan(self, 0, 130, src)["spec"]["owned"] == 3


@pytest.mark.parametrize("why, rows, length, terms, dtype", [
    ("fewer terms than the row's length", 4096, 300, 299, "float32"),
    ("under 16 terms", 131072, 8, 15, "float32"),
    ("under 4096 rows", 4095, 300, 400, "float32"),
    ("under 2^20 terms", 4096, 64, 255, "float32"),
    ("16-bit elements", 4096, 300, 400, "float16"),
    ("rows of 8 bytes", 1 << 20, 2, 16, "float32"),
    ("rows past 3 KB", 4096, 800, 800, "float32"),
])
def test_the_rule_refuses(why, rows, length, terms, dtype):
    assert owned_rows(rows, length, terms, dtype)["owned"] < 2, why


def test_self_not_dense_along_the_indexed_dim():
    self = stored([4096, 300], (1, 0), "float32")  # the indexed dim outermost
    assert plan(self, 1, 400, stored([4096, 400], (0, 1), "float32"))["spec"]["owned"] < 2


def test_knob(knob):
    knob(0)
    assert owned_rows(4096, 300, 400)["owned"] < 2
    knob(1)  # wherever it fits, rule or not
    spec = owned_rows(64, 300, 3, "float16")
    assert spec["owned"] == 3 and spec["row_warps"] == 2, spec  # 3 terms: a warp a row, but 8 groups' rows pass 96 KB
