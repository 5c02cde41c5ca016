// Dimension collapsing over several operands that share one iteration space.
// Adjacent dims d, d+1 merge when, for every operand, stride[d] ==
// size[d+1] * stride[d+1]; size-1 dims are dropped. A zero stride (an operand
// that does not vary along a dim) merges like any other, which is what keeps
// an indexed dimension apart: there the source stride is zero and the index
// stride is not, or the other way round.
#pragma once
#include <cstdint>

#include "jitops/types.h"

namespace jitops {

constexpr int kMaxOperands = 8;

struct IterationSpace {
  int ndim = 0;
  int operands = 0;
  // Only [0, ndim) is meaningful; not zero-filled, it is built on every call.
  int64_t sizes[kMaxDims + 16];
  int64_t strides[kMaxOperands][kMaxDims + 16];

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= sizes[i];
    return n;
  }
  // Largest |offset| an operand reaches, in elements.
  int64_t max_offset(int operand) const {
    int64_t m = 0;
    for (int i = 0; i < ndim; ++i) m += (sizes[i] - 1) * (strides[operand][i] < 0 ? -strides[operand][i] : strides[operand][i]);
    return m;
  }
};

// Collapses in place; the result has at least one dim (size 1 when empty of
// dims). Input ndim may be up to kMaxDims + 16; the result may still exceed
// kMaxDims, which callers must refuse.
void collapse(IterationSpace& space);

// The dims of `space` outermost first in memory order, as PyTorch's
// TensorIterator::reorder_dimensions sorts them: an insertion sort where, for
// two dims, the first operand of `priority` with both strides non-zero decides
// (the larger stride goes outside); ties keep the logical order.
void memory_order(const IterationSpace& space, const int* priority, int count, int* order);

// Permutes the dims of `space`: dim d becomes order[d].
void permute_dims(IterationSpace& space, const int* order);

// Permutes the dims of `space` into memory_order, so that operands laid out
// alike (transposed, channels-last) collapse as if they were contiguous.
void order_by_memory(IterationSpace& space, const int* priority, int count);

}  // namespace jitops
