// Planning of the accumulate family: from an iteration space over the source
// (with self, src, index and counts strides) to a specialization, a
// parameter block and a grid.
#pragma once
#include <vector>

#include "runtime/collapse.h"
#include "runtime/launch.h"
#include "runtime/launch_shape.h"

namespace jitops {

// kIndexPositionOperand: C-order strides of the index's own shape (where a bad
// value was, for the report).
enum ScatterOperand {
  kSelfOperand = 0, kSrcOperand = 1, kIndexOperand = 2, kCountsOperand = 3, kIndexPositionOperand = 4,
  kScatterOperands = 5
};

struct ScatterProblem {
  IterationSpace space;  // kScatterOperands operands, strides in elements; src strides 0 when there is no source
  void* self = nullptr;
  const void* src = nullptr;
  const void* index = nullptr;
  int* counts = nullptr;
  int element = 0;        // ScatterElement
  int element_bytes = 4;
  int index_bytes = 8;
  int64_t axis_size = 0;
  bool wrap_negative = false;  // index i < 0 names i + axis_size (numpy.take's gradient)
  int64_t axis_stride = 0;
  int axis_dim = -1;      // index_fill_: the axis among the space's dims as built (before planning orders them)
  int64_t counts_axis_stride = 0;
  int op = 0;             // ScatterOp
  bool has_alpha = false;
  double alpha = 1.0;
  int64_t alpha_int = 1;
  unsigned char value[16] = {};
  int64_t self_lo = 0, self_hi = 0;  // self's span in element offsets
  int64_t self_numel = 0;
  bool include_self = true;
  bool mean = false;                    // deterministic reduce: divide by the term count
  unsigned long long* keys = nullptr;   // deterministic passes
  int op_code = 0;
  bool rows_first = false;  // set by planning (ScatterParams::rows_first)
  int block_rows = 0;       // set by planning (ScatterParams::block_rows; 0: the block's own)
  int64_t peel_len = 0;     // set by planning: ragged packs (ScatterParams::peel_len)
  int peel_src_step = 1;    // ... and src's step along their row (ScatterParams::peel_src_step)
  bool peel_fixed_phase = false;  // ... and whether every row lies at one phase (ScatterParams::peel_fixed_phase)
};

// Index counts up to this use the small-index regime (one block row walks all
// indices) when the index varies along the rows of a 2-D layout. Settable
// for measurement (benchmarks/sweep_regime.py).
int64_t small_index_threshold();
void set_small_index_threshold(int64_t threshold);

// The owned walk (templates/scatter_owned.cuh), for measurement and tests:
// -1 where the planner finds it pays, 0 never, 1 wherever it applies.
int owned_walk_mode();
void set_owned_walk_mode(int mode);
// Development knob: the grid cap, in waves, of every walk's heuristic launch (0: the rule's, uncapped but
// for the 2-D walk and single-byte stores); returns the previous value.
int set_scatter_waves(int waves);
// Units a thread for compare-and-swap updates with many terms a destination and the identity stores before
// them, for measurement (-1: the rule's, 4 and 8).
void set_cas_unroll(int unroll);
// Products of the 2-D walk whose warp spans rows: 1 (the rule) matches a warp's peers at every unit, 0 only
// where two threads' units met, for measurement; returns the previous mode.
int set_rows_always_meet(int mode);
// The identity stores and counts before a reduction planned without src's strides, the index ordering the dims
// self leaves open (1), the indexed dim innermost (2), by prepare_axis_first's rule (3, the default), or as the
// reduction after them is (0), for measurement.
int set_prepare_order(int mode);  // returns the previous mode

// The launch configuration comes from resolve_tuning() (runtime/tuning.h),
// except for the linear passes of mean and deterministic sums.
bool plan_scatter(ScatterProblem problem, const DeviceInfo& device, IndexErrorSlot* error_slot, LaunchPlan& plan);

// Deterministic sums: the launches for `problem` (a kScatterAdd pass whose
// counts strides give each destination element a dense id), using `keys`
// (room for sort_length(units) keys, set to ~0). Appends to `plans`.
size_t sort_length(int64_t units);
void plan_deterministic_sum(ScatterProblem problem, bool mean, unsigned long long* keys, const DeviceInfo& device,
                            IndexErrorSlot* error_slot, std::vector<LaunchPlan>& plans);

}  // namespace jitops
