// The 2-D walk's block fitted to its columns: where powers of two leave over a
// quarter of the lanes past the last column (10 columns in 16 lanes), the
// block takes the columns in the fewest equal parts instead, its warps
// spanning rows (a unit's destination decides which lanes combine, not its
// row).
#pragma once
#include "runtime/collapse.h"
#include "runtime/launch_shape.h"

namespace jitops {

// `shape` (choose_launch_shape's 2-D shape for `space`, a block of `threads`;
// adds and copies) with its columns fitted where the rule applies.
void fit_block_columns(const IterationSpace& space, int threads, LaunchShape& shape);

// Development knob: -1 where it applies (the default), 0 never.
int fitted_lanes_mode();
void set_fitted_lanes_mode(int mode);

}  // namespace jitops
