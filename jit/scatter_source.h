// Specialization of templates/scatter.cuh: the fields of an accumulate-family spec.
#pragma once
#include "jit/kernel_spec.h"

namespace jitops {

struct ScatterSpecFields {
  enum : int {
    kElement = 0,  // C++ element type, see scatter_element_names()
    kIndexBytes,   // 4 or 8
    kDims,         // 1, 2 (2-D layout), 3, or 0: generic
    kOffsetBits,   // 32 or 64
    kOp,           // ScatterOp
    kVec,          // elements per thread access (1, 2, 4, 8, 16)
    kAlpha,        // 1: scale the source by alpha (index_add_)
    kUnroll,
    kMaxThreads,
    kRunsInLanes,  // dims 2: 1 where the index varies along the lanes' dim (neighbouring lanes may share a destination)
  };
};

// The element types the accumulate family instantiates, by kElement value.
enum ScatterElement : int {
  kElemInt8 = 0, kElemUInt8, kElemInt16, kElemInt32, kElemInt64, kElemFloat16, kElemBFloat16, kElemFloat32,
  kElemFloat64, kNumScatterElements
};
const char* scatter_element_type(int element);  // "float", "__half", ...

const KernelFamilyInfo& scatter_family_info();

}  // namespace jitops
