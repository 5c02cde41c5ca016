"""Dimension collapsing: adjacent dims merge when every operand is contiguous
across them; size-1 dims drop; an indexed dimension (zero stride in one
operand, non-zero in another) stays apart."""

import pytest

from jitops._core import collapse

CASES = [
    # (sizes, strides per operand) -> (sizes, strides per operand)
    ("contiguous 3-D is one run", [2, 3, 4], [[12, 4, 1], [12, 4, 1]], [24], [[1], [1]]),
    ("size-1 dims drop", [1, 5, 1, 7], [[35, 7, 7, 1], [35, 7, 7, 1]], [35], [[1], [1]]),
    ("all size 1: one dim of 1", [1, 1], [[1, 1], [5, 9]], [1], [[1], [1]]),
    ("transposed operand keeps both dims", [3, 4], [[4, 1], [1, 3]], [3, 4], [[4, 1], [1, 3]]),
    ("indexed dim stays apart", [8, 5, 6], [[30, 6, 1], [60, 0, 1], [0, 1, 0]], [8, 5, 6],
     [[30, 6, 1], [60, 0, 1], [0, 1, 0]]),
    ("outer dims merge around the indexed one", [2, 3, 5, 4, 6], [[360, 120, 24, 6, 1], [720, 240, 0, 6, 1],
                                                                 [0, 0, 1, 0, 0]],
     [6, 5, 24], [[120, 24, 1], [240, 0, 1], [0, 1, 0]]),
    ("sliced rows: inner run, outer stride", [4, 8], [[16, 1], [8, 1]], [4, 8], [[16, 1], [8, 1]]),
    ("broadcast (zero stride) merges with zero stride", [3, 4, 5], [[20, 5, 1], [0, 0, 1]], [12, 5],
     [[5, 1], [0, 1]]),
    ("negative strides merge when consistent", [3, 4], [[-4, -1], [4, 1]], [12], [[-1], [1]]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_collapse(case):
    _, sizes, strides, want_sizes, want_strides = case
    got_sizes, got_strides = collapse(sizes, strides)
    assert list(got_sizes) == want_sizes
    assert [list(s) for s in got_strides] == want_strides


def test_collapse_keeps_every_offset():
    # The set of (offset per operand) tuples is unchanged by collapsing.
    import itertools

    sizes = [2, 1, 3, 4, 2]
    strides = [[24, 24, 8, 2, 1], [48, 7, 16, 4, 1], [0, 0, 0, 1, 0]]

    def offsets(sz, st):
        result = []
        for coord in itertools.product(*[range(s) for s in sz]):
            result.append(tuple(sum(c * s for c, s in zip(coord, op)) for op in st))
        return result

    got_sizes, got_strides = collapse(sizes, strides)
    assert offsets(got_sizes, got_strides) == offsets(sizes, strides)
    assert len(got_sizes) < len(sizes)
