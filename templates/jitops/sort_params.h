// Parameter block of the bitonic sort step (templates/sort.cuh), shared by host and kernel.
#pragma once
#include "jitops/types.h"

namespace jitops {

struct SortParams {
  unsigned long long* keys;
  uint32_t n;  // a power of two; keys past the data hold ~0 and sort last
  uint32_t j;  // partner distance of this step
  uint32_t k;  // size of the bitonic sequences being merged
  uint32_t pad;
};

}  // namespace jitops
