// Parameter block of index_fill_'s marked pass (fill_marked.cuh), shared by
// host and kernel: self walked in memory order, each unit's position along
// the filled axis given by a second set of strides.
#pragma once
#include "jitops/fast_divmod.h"
#include "jitops/index_errors.h"

namespace jitops {

template <int Bits, int Dims>
struct FillMarkedParams {
  typedef OffsetTypes<Bits> T;
  typedef typename T::Linear Linear;
  typedef typename T::Stride Stride;
  typedef typename T::Divider Divider;
  static constexpr int kDims = Dims;

  void* self;
  const void* index;
  IndexErrorSlot* error;
  Linear units;            // self's elements / vec
  int64_t index_count;     // the index's values (a 0-d or 1-d index)
  int64_t index_stride;    // elements between them
  int64_t axis_size;       // valid values: [0, axis_size); marks a block holds
  int32_t op_code;
  // Whether the innermost dim is the axis: a unit's vec elements then sit at
  // vec neighbouring positions (each with its own mark), else at one.
  int32_t marks_inner;
  // The flat walk (Dims 1): self rows of axis_size elements back to back, its
  // units over the rows' seams; an element's position is its offset modulo
  // `period` (the axis's size). `elements`: self's, the last few past the
  // whole units filled one by one. Off: period 1, elements 0.
  Divider period;
  Linear elements;
  unsigned char value[16];   // the value, as the element's bits
  Divider sizes[Dims];       // collapsed, innermost last; the innermost counted in units
  Stride self_strides[Dims];  // elements (the innermost: a unit's)
  Stride mark_strides[Dims];  // positions along the axis (0 off it)
};

}  // namespace jitops
