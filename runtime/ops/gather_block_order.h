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
};

GatherBlockOrder gather_block_order(const GatherProblem& p, const LaunchShape& shape, const DeviceInfo& device,
                                    int threads);

}  // namespace jitops
