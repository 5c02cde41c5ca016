// Specialization of templates/upsample.cuh: the fields of an upsample spec.
#pragma once
#include "jit/kernel_spec.h"

namespace jitops {

enum UpsampleKind : int {
  kUpsampleForward = 0,
  kUpsampleForward2x,
  kUpsampleBackward,
  kUpsampleBackward2x,
  kUpsampleRowsForward,   // dense NCHW or channels-last result, any scale (templates/upsample_rows.cuh)
  kUpsampleRowsBackward,  // dense NCHW or channels-last input gradient, any scale
  kUpsampleTilesBackward, // ... whose output gradient's rows are dense too: staged in shared memory (upsample_tiles.cuh)
};

struct UpsampleSpecFields {
  enum : int {
    kKind = 0,     // UpsampleKind
    kElement,      // forward: bytes per element (it only moves bits); backward: the DType (it sums)
    kVec,          // 2x and row kernels: elements per item
    kOffsetBits,   // 32 (FastDivmod) or 64
    kUnroll,       // items in flight per thread (row kernels: groups of vec a thread holds in a row; tiles:
                   // 16-byte loads in flight a thread while staging)
    kMaxThreads,
    kNchwRows,     // row and tile kernels: rows of W (NCHW) rather than of W x C (channels-last)
    kSrcPacked,    // forward row kernels: the source's inner dim is dense and aligned, read in packs
    kWindowH,      // backward row and tile kernels: the widest window of output rows (0: any, in a plain loop)
    kWindowW,      // ... of output columns
    kOneSpan,      // tile kernel: a tile's output-gradient rows follow each other in memory, staged as one span
    kPerItem,      // tile kernel: consecutive elements a thread sums and stores at once (16- and 8-bit types)
  };
};

const KernelFamilyInfo& upsample_family_info();

}  // namespace jitops
