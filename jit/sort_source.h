// Specialization of templates/sort.cuh (one kernel; the family keeps the
// launch bound as its only field).
#pragma once
#include "jit/kernel_spec.h"

namespace jitops {

struct SortSpecFields {
  enum : int { kMaxThreads = 0 };
};

const KernelFamilyInfo& sort_family_info();

}  // namespace jitops
