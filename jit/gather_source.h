// Specialization of templates/gather.cuh: the fields of a gather-family spec.
#pragma once
#include "jit/kernel_spec.h"

namespace jitops {

struct GatherSpecFields {
  enum : int {
    kUnitBytes = 0,   // 1, 2, 4, 8, 16: bytes moved per element or vector
    kIndexBytes,      // 4 (int32) or 8 (int64)
    kDims,            // 1, 2 (2-D thread layout), 3, or 0: generic up to kMaxDims
    kOffsetBits,      // 32 (FastDivmod) or 64
    kWrap,            // 1: negative indices count from the end (take)
    kFlat,            // 1: unravel the index over x's own shape (take, axis=None)
    kUnroll,          // loads in flight per thread
    kMaxThreads,      // __launch_bounds__
    kTileA,           // tile regime (templates/gather_tile.cuh): elements along the output's inner dim; 0: none
    kTileB,           // and along the dim x is dense in
    kTileIndexEach,   // 1: the index varies inside a tile (an index value per element); 2: and is staged
                      // through shared memory along a first (dense along a, varying along b); 0: one a tile
    kIndexReuse,      // rows an index load serves (an index expanded along them; 1: none): the linear
                      // layout's rows of one dim a unit, or the 2-D layout's rows of a thread
    kRowLocal,        // 1: the 2-D layout's block makes every column of its rows (gather_row_local.h)
    kRagged,          // ragged packs (gather.cuh's RaggedVec): elements a pack, unit the element; 0: none
  };
};

const KernelFamilyInfo& gather_family_info();

}  // namespace jitops
