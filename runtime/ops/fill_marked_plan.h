// index_fill_ as one pass over self (templates/fill_marked.cuh): where the
// index walk would store scattered pieces of sectors (an inner axis of a few
// elements) and the index names many of the axis's positions, each block marks
// the named positions in shared memory and writes self in memory order.
#pragma once
#include "runtime/launch.h"
#include "runtime/ops/scatter_plan.h"

namespace jitops {

// Plans `problem` (an index_fill_, kScatterFill) as the marked pass, when it
// applies and pays; false leaves it to the index walk.
bool plan_fill_marked(const ScatterProblem& problem, const DeviceInfo& device, IndexErrorSlot* error_slot,
                      LaunchPlan& plan);

// Development knob: -1 where it pays (the default), 0 never, 1 wherever it applies.
void set_fill_marked_mode(int mode);

}  // namespace jitops
