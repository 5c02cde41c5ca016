// The 2-D gather walk with one block a row over every column
// (templates/gather.cuh, gather_2d's RowLocal): where each row of the
// output picks many elements from one short, contiguous row of x.
#pragma once
#include "runtime/launch_shape.h"
#include "runtime/ops/gather_plan.h"

namespace jitops {

// The columns a thread takes at a time (the walk's Unroll; a block of
// `threads` x 1 a row), or 0 where the walk's own shape stays.
int gather_row_local_columns(const GatherProblem& p, const LaunchShape& shape, const DeviceInfo& device,
                             int threads);

}  // namespace jitops
