// Planning of the gather family: from an iteration space over the output
// (with out, x and index strides) to a specialization, a parameter block and
// a grid. The op front ends (gather_ops.h) build the space; this file decides
// collapsing, vector width, offset width, layout and launch shape.
#pragma once
#include "runtime/collapse.h"
#include "runtime/launch.h"
#include "runtime/launch_shape.h"

namespace jitops {

// kIndexPosition: C-order strides of the index's own shape, so that a kernel
// can say where in the index a bad value was.
enum GatherOperand { kOut = 0, kX = 1, kIndex = 2, kIndexPosition = 3, kGatherOperands = 4 };

struct GatherProblem {
  IterationSpace space;  // operands: kOut, kX, kIndex, kIndexPosition; strides in elements
  void* out = nullptr;
  const void* x = nullptr;
  const void* index = nullptr;
  int element_bytes = 4;
  int index_bytes = 8;
  int64_t axis_size = 0;    // valid index range
  int64_t axis_stride = 0;  // x elements per index step (axis mode)
  bool wrap = false;        // negative indices count from the end
  bool flat = false;        // unravel the index over x's own layout below
  IterationSpace x_layout;  // flat mode: x alone (one operand), collapsed
  int op_code = 0;
  int64_t peel_len = 0;     // set by planning: ragged packs (GatherParams::peel_len; gather_ragged.h)
};

// Plans one launch; returns false when there is nothing to do (empty output).
// The launch configuration comes from resolve_tuning() (runtime/tuning.h).
bool plan_gather(GatherProblem problem, const DeviceInfo& device, IndexErrorSlot* error_slot, LaunchPlan& plan);

// Development knob: the grid cap, in waves, of every heuristic walk (0: the heuristic's rule, uncapped for
// units of 8 bytes or more); returns the previous value.
int set_gather_waves(int waves);

}  // namespace jitops
