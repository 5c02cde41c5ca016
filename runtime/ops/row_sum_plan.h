// Row sums (templates/row_sort.cuh): when an add moves whole contiguous rows
// (index_add_ along the outer dim, scatter_add_ with an index expanded along
// the rows), sort the rows by destination and sum each destination's rows
// before writing, instead of one atomic per element.
#pragma once
#include <cstddef>
#include <vector>

#include "runtime/launch.h"
#include "runtime/ops/scatter_plan.h"

namespace jitops {

struct RowSumLayout {
  bool applies = false;
  // Few destinations (self's rows fit in shared memory): blocks add their
  // rows into private copies of them, one launch, no scratch
  // (templates/row_private.cuh). Otherwise the rows are sorted.
  bool private_copies = false;
  int copies = 0;             // ... copies a block
  unsigned shared_bytes = 0;  // ... the block's copies
  // The launch that adds the rows (private copies, or the sorted rows' sums):
  int warps = 0;              // warps a block (a private copy's warps split a row)
  int in_flight = 0;          // rows a warp (a group of its lanes, when sorted) loads at a time
  unsigned blocks = 0;
  int unit_splits = 1;        // sums: warps a run of sorted rows is split over (templates/row_sort.cuh, row_sum)
  int vec = 1;
  int64_t rows = 0, destinations = 0, row_units = 0;
  int64_t index_stride = 0, position_stride = 0, src_row_stride = 0, self_row_stride = 0;
  int tiles = 0;            // buckets of kRowSortTile destinations
  int64_t chunk_rows = 0;   // rows per count / place block
  int chunks = 0;
  size_t scratch_words() const;  // 32-bit words: see templates/jitops/row_sort_params.h (none zeroed)
};

// Whether row sums may apply to `problem` at all (a float add, large enough):
// the cheap test every add call makes before the device or the layout.
bool row_sums_considered(const ScatterProblem& problem);

// Whether `problem` (an add, not yet collapsed) takes the row-sum path on
// `device`, and its shape; applies == false keeps the atomic kernels.
RowSumLayout row_sum_layout(const ScatterProblem& problem, const DeviceInfo& device);

// The launches: one with private copies; else five (count, scan, place, sort
// buckets, sum), with `scratch` holding layout.scratch_words() words (no
// memset first: every pass stores what the next one reads).
void plan_row_sum(const ScatterProblem& problem, const RowSumLayout& layout, int* scratch, const DeviceInfo& device,
                  IndexErrorSlot* error_slot, std::vector<LaunchPlan>& plans);

// Development knob: 0 off, 1 where it pays (the default), 2 sorted wherever it
// applies, 3 private copies wherever they fit.
void set_row_sum_mode(int mode);
// Development knob: the private copies' shared memory per SM (bytes), rows a
// warp loads at a time (2 to 32, even) and the warps a block aims for.
void set_row_private_shape(int shared_bytes, int in_flight, int warps);
// Development knob: the sorted rows' sums, rows a group of lanes loads at a
// time (rounded down to a power of two from 2 to 32) and warps a block.
void set_row_sum_shape(int in_flight, int warps);

}  // namespace jitops
