// The order the 2-D gather walk's blocks take their (column range, row
// group) in (templates/jitops/block_order.cuh): columns first, the hardware's
// order, or rows first within bands of neighbouring column ranges, so that
// blocks running together share the parts of x they read while those sit in
// L2.
#pragma once
#include "runtime/launch_shape.h"
#include "runtime/ops/gather_plan.h"

namespace jitops {

struct GatherBlockOrder {
  int band = 0;                  // 0: columns first; N: bands of N column ranges, each band's rows first
  const char* regime = nullptr;  // what explain() shows, or nothing for columns first
  bool row_group_a_block = false;  // the grid's y extent set to the row groups (gather_row_groups)
};

// Row groups in passes (the index the same along a row, so a thread's rows
// share its load): the grid's y extent that gives every block one row group,
// where blocks walking several would keep more of x in flight than L2 holds;
// 0 to keep the shape. Lowers shape.unroll (a thread's rows) where one
// group's rows alone would not fit.
unsigned gather_row_passes(const GatherProblem& p, LaunchShape& shape, const DeviceInfo& device);

GatherBlockOrder gather_block_order(const GatherProblem& p, const LaunchShape& shape, const DeviceInfo& device,
                                    int threads);

// The grid's y extent that gives every block one row group of `shape` (at most 65535).
unsigned gather_row_groups(const GatherProblem& p, const LaunchShape& shape);

}  // namespace jitops
