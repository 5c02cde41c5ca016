// index_add_ along a dim self stores densely, through its rows in shared memory
// (templates/scatter_owned_rows.cuh): a block reads 32 x groups of self's rows, applies every term to them
// there, and writes them back.
#pragma once
#include "runtime/launch.h"
#include "runtime/ops/scatter_plan.h"

namespace jitops {

struct OwnedRowsLayout {
  bool applies = false;
  int axis = -1;          // the space's dim of the terms (where self moves only through the index)
  int row_warps = 1;      // warps splitting each 32 rows' destinations
  bool src_along_terms = false;  // src staged with its lanes along the terms (src dense along the axis)
  int threads = 0;        // 32 x groups x row_warps
  unsigned shared_bytes = 0;  // the block's rows
};

// For `problem` (its space ordered and collapsed as the walks take it, in units of one element).
OwnedRowsLayout owned_rows_layout(const ScatterProblem& problem);

// Development knob: -1 where it pays (the default), 0 never, 1 wherever it fits; returns the previous mode.
int set_owned_rows_mode(int mode);

}  // namespace jitops
