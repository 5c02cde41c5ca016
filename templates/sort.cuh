// An ascending bitonic sort of 64-bit keys in global memory, one compare-
// exchange step per launch (the host loops over the stages). Used for
// deterministic reductions, where the keys are (destination, position).
#pragma once
#include "jitops/sort_params.h"

namespace jitops {


__device__ __forceinline__ void bitonic_step(const SortParams& p) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x) {
    const uint32_t partner = i ^ p.j;
    if (partner <= i) continue;
    const bool ascending = (i & p.k) == 0;
    const unsigned long long a = p.keys[i], b = p.keys[partner];
    if ((a > b) == ascending) {
      p.keys[i] = b;
      p.keys[partner] = a;
    }
  }
}

}  // namespace jitops
