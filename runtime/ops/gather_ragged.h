// Ragged packs in the gathers (templates/gather.cuh's RaggedVec): rows of out
// dense along the innermost dim, with x's rows dense too and one index value
// a row (index_select, take along an axis), that no pack size divides: each
// unit the pack of out aligned in memory that holds its place, x read through
// two aligned packs shifted into place, a row's ends element by element.
#pragma once
#include "runtime/ops/gather_plan.h"

namespace jitops {

// The elements a pack where `problem` (collapsed, in the walk's order) takes
// ragged packs: its innermost dim then counts packs, out's and x's strides
// along it are the pack's elements, and peel_len is the row's length; 0 (and
// `problem` untouched) where it does not. `uniform_pack(problem, max_bytes)`
// gives the elements of the widest uniform pack that fits; it is asked only
// where the layout and the rule's sizes allow ragged packs (it copies the
// problem, and this is the per-call planning path).
int gather_ragged_packs(GatherProblem& problem, int max_bytes,
                        int (*uniform_pack)(const GatherProblem& problem, int max_bytes));

// Development knob: -1 where the rule takes them (the default), 0 never, 1 wherever the layout allows them;
// returns the previous mode.
int set_gather_ragged_mode(int mode);

}  // namespace jitops
