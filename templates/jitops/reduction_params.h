// The parameter block of a user reduction (jitops.ReductionKernel), filled on
// the host (runtime/ops/reduction_plan.cpp) and read by templates/reduction.cuh.
//
// The array is seen as kept dims (one output element each) times reduced
// dims, each collapsed on its own; offsets of an output and of a reduced
// position add up to an element's offset in each input.
#pragma once
#include "jitops/fast_divmod.h"
#include "jitops/types.h"

namespace jitops {

constexpr int kMaxReductionInputs = 4;

template <int Bits>
struct ReductionParams {
  typedef typename OffsetTypes<Bits>::Linear Linear;
  typedef typename OffsetTypes<Bits>::Stride Stride;
  typedef typename OffsetTypes<Bits>::Divider Divider;

  const void* in[kMaxReductionInputs];
  void* out;
  void* partial;      // split reductions: [split][output] of the reduce type, finished by a second kernel
  Linear outputs;     // output elements
  Linear reduced;     // elements reduced into each
  Linear per_split;   // reduced elements each blockIdx.y covers (a multiple of the vector width)
  int64_t in_size;    // _in_ind.size(): elements of the broadcast inputs
  int splits;         // blockIdx.y extent of the split pass (the finish pass folds this many)
  int o_ndim, r_ndim;
  Divider o_div[kMaxDims];  // by the size of each kept dim (dim 0 unused)
  Divider r_div[kMaxDims];
  Stride o_stride[kMaxReductionInputs + 1][kMaxDims];  // inputs, then the output (slot kMaxReductionInputs)
  Stride r_stride[kMaxReductionInputs][kMaxDims];
};

}  // namespace jitops
