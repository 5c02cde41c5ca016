"""index_copy_'s tiles (runtime/ops/scatter_tile_plan.cpp), planned for sm_90 with no GPU: which copies go
through shared memory (self dense along its inner dim, src dense along another), along which dims, and
which stay on the strided walk."""

import pytest

import jitops
from jitops import VirtualArray as V


def plan(self, dim, index, src):
    (r,) = jitops.explain("index_copy_", self, dim, index, src, arch="sm_90")
    return r


def stored(shape, order, dtype):
    """A view of `shape` laid out in memory in `order` (outermost first)."""
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d], step = step, step * shape[d]
    return V(list(shape), dtype, strides=strides)


@pytest.fixture
def knob():
    yield jitops._core._set_scatter_tiles
    jitops._core._set_scatter_tiles(1)


def test_a_whole_transposed_src_through_a_dim_of_one_is_tiled(knob):
    """Seed 1909's bfloat16 copy of a (64x17x1x4096) src stored dim 0 innermost: in self's order its lanes
    read 2176 bytes apart (0.89x PyTorch); tiles over self's 4096 and src's 64, one index value a tile."""
    shape = [64, 17, 1, 4096]
    r = plan(V(shape, "bfloat16"), 2, V([1], "int64"), V(shape, "bfloat16", strides=[1, 64, 1088, 1088]))
    assert (r["spec"]["tile_a"], r["spec"]["tile_b"], r["spec"]["index_each"]) == (32, 32, 0)
    assert "index_tiles<unsigned short, long long, 32, 32, 256, false, false, false>" in r["source"], r["source"]
    assert r["block"] == (256, 1, 1) and r["regime"].startswith("tiled")
    knob(0)
    assert plan(V(shape, "bfloat16"), 2, V([1], "int64"),
                V(shape, "bfloat16", strides=[1, 64, 1088, 1088]))["spec"]["tile_a"] == 0


def test_src_dense_along_the_indexed_dim_loads_a_value_a_row_past_half_the_l2():
    """src stored with the indexed dim innermost: tiles of a value a row where src passes half the L2 (25 MB
    of sm_90's 50 planned with no GPU); within it the walk's lanes re-read src's sectors from the L2."""
    r = plan(V([45, 19, 9001], "float32"), 0, V([41], "int32"), stored([41, 19, 9001], (1, 2, 0), "float32"))
    assert r["spec"]["tile_a"] > 0 and r["spec"]["index_each"] == 1
    assert "index_tiles<unsigned int, int, 32, 32, 256, true, false, false>" in r["source"]
    r = plan(V([45, 19, 8001], "float32"), 0, V([41], "int32"), stored([41, 19, 8001], (1, 2, 0), "float32"))
    assert r["spec"]["tile_a"] == 0


def test_channels_last_src_into_a_contiguous_self():
    r = plan(V([3, 37, 21, 53], "complex64"), 0, V([2], "int64"), stored([2, 37, 21, 53], (0, 2, 3, 1), "complex64"))
    assert r["spec"]["tile_a"] > 0 and r["spec"]["index_each"] == 0 and r["spec"]["element"] == 4  # 8-byte words


@pytest.mark.parametrize("why,self_,dim,n,src", [
    ("under 2^15 units", V([45, 13, 55], "float32"), 1, 11, stored([45, 11, 55], (2, 1, 0), "float32")),
    ("src dense along self's inner dim", V([45, 13, 67], "float32"), 1, 11, V([45, 11, 67], "float32")),
    ("src expanded along self's inner dim", V([450, 13, 67], "float32"), 1, 11,
     V([450, 11, 67], "float32", strides=[11, 1, 0])),
    ("src's dense dim under 16", V([15, 130, 67], "float32"), 1, 110, stored([15, 110, 67], (1, 2, 0), "float32")),
    ("self's inner dim under 16", V([450, 130, 15], "float32"), 1, 110, stored([450, 110, 15], (2, 1, 0), "float32")),
    ("src dense along the indexed dim, within half the L2", V([45, 19, 67], "float32"), 0, 41,
     stored([41, 19, 67], (1, 2, 0), "float32")),
    ("the indexed dim is self's inner one", V([450, 13, 67], "float32"), 2, 60,
     stored([450, 13, 60], (2, 0, 1), "float32")),
])
def test_copies_that_keep_the_strided_walk(why, self_, dim, n, src):
    assert plan(self_, dim, V([n], "int64"), src)["spec"]["tile_a"] == 0, why


def test_adds_of_native_reductions_are_tiled_others_keep_their_walks():
    """index_add_ from a transposed src: tiles whose updates are red.global adds (float32, float64, int32,
    int64), alpha applied in the kernel; 8- and 16-bit adds keep the walk's packs and CAS loops, scatter_add_
    (an expanded index's rows, or a full index varying along self's inner dim) its walks."""
    src = stored([45, 11, 67], (2, 1, 0), "float32")
    (r,) = jitops.explain("index_add_", V([45, 13, 67], "float32"), 1, V([11], "int64"), src, alpha=2.5,
                          arch="sm_90")
    assert r["spec"]["tile_a"] > 0 and r["spec"]["alpha"] == 1
    assert "index_tiles<float, long long, 32, 32, 256, false, true, true>" in r["source"], r["source"]
    for dtype in ("float64", "int32", "int64", "float16", "bfloat16"):
        (r,) = jitops.explain("index_add_", V([45, 13, 67], dtype), 1, V([11], "int32"),
                              stored([45, 11, 67], (2, 1, 0), dtype), arch="sm_90")
        assert r["spec"]["tile_a"] > 0 and r["spec"]["alpha"] == 0, dtype
    for dtype in ("int16", "int8"):
        (r,) = jitops.explain("index_add_", V([45, 13, 67], dtype), 1, V([11], "int64"),
                              stored([45, 11, 67], (2, 1, 0), dtype), arch="sm_90")
        assert r["spec"]["tile_a"] == 0, dtype
    # scatter_add_'s rows through an expanded index, src stored along them: the 2-D walk (NOTES 116)
    (r,) = jitops.explain("scatter_add_", V([3648, 16], "int64"), 0, V([726433, 16], "int32", strides=[1, 0]),
                          stored([726433, 16], (1, 0), "int64"), arch="sm_90")
    assert r["spec"]["tile_a"] == 0
    full = stored([45, 13, 67], (2, 1, 0), "int64")
    (r,) = jitops.explain("scatter_add_", V([45, 13, 67], "float32"), 1, full,
                          stored([45, 13, 67], (1, 2, 0), "float32"), arch="sm_90")
    assert r["spec"]["tile_a"] == 0
    (r,) = jitops.explain("index_fill_", V([45, 13, 67], "float32"), 1, V([11], "int64"), 1.5, arch="sm_90")
    assert r["spec"]["tile_a"] == 0
