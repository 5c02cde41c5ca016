// Adds and products into private copies of a small self (templates/scatter_private.cuh):
// where many terms land on each of a few thousand elements, each block adds
// its terms into a copy of self in shared memory, then the copy into self.
#pragma once
#include "runtime/launch.h"
#include "runtime/ops/scatter_plan.h"

namespace jitops {

struct PrivateAddLayout {
  bool applies = false;
  int op = 0;                 // the spec's op: kScatterPrivateAdd or kScatterPrivateMul
  int flush_vec = 1;          // slots a flush packs (self contiguous and aligned), else 1
  unsigned blocks = 0;
  unsigned shared_bytes = 0;  // the copy: self's span of offsets in accumulators
};

// For `problem` (kScatterAdd or kScatterMul without counts, its space collapsed, in units of one element).
PrivateAddLayout private_add_layout(const ScatterProblem& problem, const DeviceInfo& device);

// Development knob: -1 where it pays (the default), 0 never, 1 wherever it fits.
void set_private_add_mode(int mode);
// Development knob for products alone: -1 where they pay (the default), 0 never, 1 wherever they fit;
// returns the previous mode.
int set_private_products_mode(int mode);

}  // namespace jitops
