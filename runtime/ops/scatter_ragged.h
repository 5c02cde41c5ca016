// Ragged packs (templates/scatter.cuh's Peeled): packs of plain stores and
// vector adds for rows that no pack size divides, each unit the pack aligned
// in memory that holds its place in the row, a row's two ends partly filled.
#pragma once
#include "runtime/ops/scatter_plan.h"

namespace jitops {

// Where `problem` (collapsed, in the walk's order, given no uniform pack)
// takes ragged packs: the elements a pack, its innermost dim counted in
// packs, src's broadcast kept (step 0) and the place of each unit given
// through the counts operand; 1 (and `problem` untouched) where it does not.
int ragged_packs(ScatterProblem& problem, int max_bytes);

// Development knob: -1 where the rule takes them (the default), 0 never, 1 wherever the layout allows them;
// returns the previous mode.
int set_ragged_packs_mode(int mode);

}  // namespace jitops
