"""The index innermost in the 2-D walk (runtime/ops/scatter_index_inner.cpp) forced wherever the layout
allows: the every-case suites of index_add_ and index_copy_ / index_fill_ (every dtype x index dtype x dims
x dim x layout, duplicate indices for the adds) run again through it."""

import pytest

import jitops

pytest.importorskip("torch")
import test_scatter_gpu as scatter  # noqa: E402 - after the skip: it needs torch

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def index_inner_wherever_the_layout_allows():
    before = jitops._core._index_inner()
    jitops._core._set_index_inner(1)
    yield
    jitops._core._set_index_inner(before)


test_index_add = scatter.test_index_add
test_index_copy_and_fill = scatter.test_index_copy_and_fill
