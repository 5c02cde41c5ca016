// The index innermost in the 2-D walk (PyTorch's "index major" order) for an
// index that varies along the walk's rows only, into a self whose indexed dim
// lies innermost in memory (index_add_ and index_copy_ into a transposed
// self): a warp takes one column's terms, whose destinations share sectors.
#pragma once
#include "runtime/launch.h"
#include "runtime/ops/scatter_plan.h"

namespace jitops {

// Whether `problem` (its space collapsed, in the walk's order, rows outer)
// should swap its two dims so that the index's goes inside.
bool index_goes_inner(const ScatterProblem& problem, const DeviceInfo& device);

// Development knob: -1 where it pays (the default), 0 never, 1 wherever the layout allows.
int index_inner_mode();
void set_index_inner_mode(int mode);

}  // namespace jitops
