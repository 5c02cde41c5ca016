// Specialization of templates/upsample.cuh: the fields of an upsample spec.
#pragma once
#include "jit/kernel_spec.h"

namespace jitops {

enum UpsampleKind : int { kUpsampleForward = 0, kUpsampleForward2x, kUpsampleBackward, kUpsampleBackward2x };

struct UpsampleSpecFields {
  enum : int {
    kKind = 0,     // UpsampleKind
    kElement,      // forward: bytes per element (it only moves bits); backward: the DType (it sums)
    kVec,          // 2x kernels: elements per item
    kOffsetBits,   // 32 (FastDivmod) or 64
    kUnroll,       // items in flight per thread
    kMaxThreads,
  };
};

const KernelFamilyInfo& upsample_family_info();

}  // namespace jitops
