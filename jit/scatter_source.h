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
    kRunsInLanes,  // whether lanes may share a destination. Dims 2: 0 no, 1 yes (compare-and-swap ops
                   // combine runs and peers), 2 adds combine runs too, 3 as 0 within a row but a warp's rows
                   // may meet: hot peers combine, 4 as 2 and lanes that repeat a destination out of
                   // order combine, 5 as 3 with the peers matched in every warp (lane_runs_2d in
                   // scatter_plan.cpp);
                   // the linear walk: 1 unless its innermost dim moves self and spans a warp
    kOwned,        // 1: the owned walk (scatter_owned.cuh): a thread takes every term of its destinations;
                   // 2: with self's rows in shared memory (scatter_owned_rows.cuh), src staged along the
                   // owners; 3: the same, src staged along the terms (src dense along the indexed dim)
    kPeel,         // 1: ragged packs (scatter.cuh's Peeled): units aligned in memory, a row's ends partly filled
    kTileA,        // index_copy_'s and index_add_'s tiles (scatter_tile.cuh): elements along self's inner dim; 0: none
    kTileB,        // and along the dim src is dense in
    kTileIndexEach,  // 1: that dim is the indexed one (an index value per row of the tile)
    kRowWarps,     // kOwned 2 and 3 (scatter_owned_rows.cuh): warps splitting each 32 rows' destinations
  };
};

// The element types the accumulate family instantiates, by kElement value.
enum ScatterElement : int {
  kElemInt8 = 0, kElemUInt8, kElemInt16, kElemInt32, kElemInt64, kElemFloat16, kElemBFloat16, kElemFloat32,
  kElemFloat64, kNumScatterElements
};
const char* scatter_element_type(int element);  // "float", "__half", ...

const KernelFamilyInfo& scatter_family_info();

// A spec of the family with the fields every launch names; alpha, lane_runs and owned 0.
KernelSpec scatter_spec(int element, int index_bytes, int dims, int offset_bits, int op, int vec, int unroll,
                        int threads);

}  // namespace jitops
