// Specialization of templates/histogram.cuh: the fields of a histc spec.
#pragma once
#include "jit/kernel_spec.h"

namespace jitops {

// Resident blocks of 256 threads per SM the kernels are built for (registers
// for two batches of loads in flight: the grid is this many blocks per SM).
constexpr int kHistogramBlocksPerSm = 4;

// Blocks of the cluster kernel (sm_90 and newer): the portable cluster size,
// each block of kHistogramClusterThreads threads on its own SM.
constexpr int kHistogramClusterBlocks = 8;
constexpr int kHistogramClusterThreads = 1024;

enum HistogramKind : int { kHistogramRange = 0, kHistogramCount = 1, kHistogramCluster = 2 };

struct HistogramSpecFields {
  enum : int {
    kKind = 0,   // HistogramKind
    kDType,      // x's DType
    kOutDType,   // the counts' DType (count kernel)
    kVec,        // elements per load when x is dense
    kDims,       // 0: dense; 1..3 strided; 16: generic strided
    kMaxThreads,
  };
};

const KernelFamilyInfo& histogram_family_info();

}  // namespace jitops
