// Parameter block of the accumulate family (index_add_, index_copy_,
// index_fill_, scatter_add_, scatter_reduce_), shared by host and kernel.
//
// Every op is one loop over the source's collapsed dimensions:
//   self[self_base(s) + idx(s) * axis_stride]  op=  src[src_off(s)]
// with idx(s) = index[index_off(s)]. index_add_ / index_copy_ vary the index
// along one dim of the source, scatter_* along every dim of the index;
// index_fill_ has no source (the value is in the block).
#pragma once
#include "jitops/fast_divmod.h"
#include "jitops/index_errors.h"

namespace jitops {

enum ScatterOp : int32_t {
  kScatterAdd = 0,     // self += alpha * src (atomic)
  kScatterCopy = 1,    // self = src
  kScatterFill = 2,    // self = value
  kScatterMul = 3,     // self *= src (atomic)
  kScatterMax = 4,     // self = max(self, src) (atomic)
  kScatterMin = 5,     // self = min(self, src) (atomic)
  kScatterPrepare = 6, // include_self=False / mean: self = value (the identity), counts += 1
  kScatterMeanFinish = 7,  // over self: self /= counts (+1 with include_self) where counts > 0
  kScatterDetKeys = 8,     // deterministic sums: key = (destination, unit) per unit, for sorting
  kScatterDetReduce = 9,   // ... then one thread per destination adds its units in unit order
  // Row sums (row_sort.cuh, RowSortParams): whole rows added to rows of self,
  // combined before memory. A two-level counting sort of the rows by destination ...
  kScatterRowCount = 10,   // ... counts each chunk's rows per tile of destinations
  kScatterRowScan = 11,    // ... turns them into positions in each tile's bucket
  kScatterRowPlace = 12,   // ... places the rows into the buckets
  kScatterRowSum = 13,     // then each warp sums a run of sorted rows per destination
  kScatterRowTileSort = 14,  // ... (after place) sorts each bucket by destination
  kScatterRowPrivate = 15,   // or, few destinations: rows added into private copies of self's rows in
                             // shared memory (row_private.cuh), one launch
  kScatterFillMarked = 16,   // index_fill_ as one pass over self, where the index marked the element's
                             // position along the axis (fill_marked.cuh, FillMarkedParams)
  kScatterPrivateAdd = 17,   // adds into private copies of a small self in shared memory, then into self
                             // (scatter_private.cuh)
  kScatterMeanReset = 18,    // over self: self = 0 where counts > 0 (mean, include_self=False, after a
                             // prepare pass that only counted)
  kScatterAddCounted = 19,   // kScatterAdd that also counts each unit (mean, include_self=True): a spec's
                             // op only; the problem's op stays kScatterAdd, its counts set
  kScatterPrivateMul = 20,   // products into private copies of a small self in shared memory, then into self
};

template <int Bits, int Dims>
struct ScatterParams {
  typedef OffsetTypes<Bits> T;
  typedef typename T::Linear Linear;
  typedef typename T::Stride Stride;
  typedef typename T::Divider Divider;

  void* self;
  const void* src;
  const void* index;
  IndexErrorSlot* error;
  int* counts;         // one per self element, dense in self's memory order (mean); else null
  Linear numel;        // iteration units
  int32_t ndim;
  int32_t op_code;
  int64_t axis_size;   // valid indices: [0, axis_size)
  // Added to a negative index before it is checked: axis_size where negative
  // indices count from the end (numpy.take's, in its gradient), else 0.
  int64_t index_wrap;
  Stride axis_stride;  // self elements per index step
  Stride counts_axis_stride;
  Stride self_lo, self_hi;  // self's span in element offsets, for paired 16-bit atomics
  double alpha;        // index_add_'s alpha for floating types
  int64_t alpha_int;   // ... for integer types
  int32_t include_self;
  int32_t mean;        // deterministic reduce: divide by the number of terms (+ include_self)
  unsigned long long* keys;  // deterministic passes: one sort key per unit
  unsigned char value[16];  // index_fill_'s value / the identity, as the element's bits
  Divider sizes[Dims];
  Stride self_strides[Dims];
  Stride src_strides[Dims];
  Stride index_strides[Dims];
  Stride counts_strides[Dims];
  int64_t index_positions[Dims];  // C-order strides of the index's shape: where a bad index was (report only)
  // The 2-D walk's blocks in row-major order of (grid.y, grid.x) rather than
  // x first: where self moves along columns only through the index, so that
  // the blocks in flight at once reach many rows' destinations, not a few.
  int32_t rows_first;
  // The 2-D walk's rows a block takes: blockDim.y, or fewer where the tensor
  // has fewer rows than a block (a few rows reached through the index): the
  // block's blockDim.y / block_rows groups of block_rows rows then take
  // neighbouring column ranges, so that its warps keep their shape (the
  // planner's lanes a row) and none is left without a row.
  int32_t block_rows;
  // Ragged packs (a Peeled kernel, scatter.cuh): the elements of a row along
  // the innermost dim, whose units are packs aligned in memory rather than in
  // the row; 0 otherwise. src's step along that dim: 1, or 0 where src is
  // broadcast along it (one value a row).
  int64_t peel_len;
  int32_t peel_src_step;
  // 1 where every destination row lies at one offset into a pack (the axis's
  // stride a whole number of packs, or one position along it): a unit's pack
  // then follows from its own place, and its src loads need not wait for the
  // index.
  int32_t peel_fixed_phase;
};

}  // namespace jitops
