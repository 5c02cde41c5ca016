#include "runtime/collapse.h"

#include <utility>

namespace jitops {

void memory_order(const IterationSpace& s, const int* priority, int count, int* order) {
  auto should_swap = [&](int d0, int d1) {
    for (int i = 0; i < count; ++i) {
      const int64_t s0 = s.strides[priority[i]][d0], s1 = s.strides[priority[i]][d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 != s1) return s0 > s1 ? 1 : -1;
      if (s.sizes[d0] != s.sizes[d1]) return s.sizes[d0] > s.sizes[d1] ? 1 : -1;
    }
    return 0;
  };
  int perm[kMaxDims + 16];  // innermost first
  for (int i = 0; i < s.ndim; ++i) perm[i] = s.ndim - 1 - i;
  for (int i = 1; i < s.ndim; ++i) {
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  for (int i = 0; i < s.ndim; ++i) order[i] = perm[s.ndim - 1 - i];
}

void order_by_memory(IterationSpace& s, const int* priority, int count) {
  int order[kMaxDims + 16];
  memory_order(s, priority, count, order);
  permute_dims(s, order);
}

void permute_dims(IterationSpace& s, const int* order) {
  IterationSpace sorted = s;
  for (int d = 0; d < s.ndim; ++d) {
    sorted.sizes[d] = s.sizes[order[d]];
    for (int k = 0; k < s.operands; ++k) sorted.strides[k][d] = s.strides[k][order[d]];
  }
  s = sorted;
}

void collapse(IterationSpace& s) {
  // Drop size-1 dims: they add nothing to any offset.
  int n = 0;
  for (int d = 0; d < s.ndim; ++d) {
    if (s.sizes[d] == 1) continue;
    s.sizes[n] = s.sizes[d];
    for (int k = 0; k < s.operands; ++k) s.strides[k][n] = s.strides[k][d];
    ++n;
  }
  if (n == 0) {
    s.ndim = 1;
    s.sizes[0] = 1;
    for (int k = 0; k < s.operands; ++k) s.strides[k][0] = 1;
    return;
  }
  // Merge from the innermost dim outwards.
  int out = n - 1;  // the dim being grown, written at the back
  int64_t sizes[kMaxDims + 16];
  int64_t strides[kMaxOperands][kMaxDims + 16];
  int m = 0;  // merged dims, innermost first
  sizes[0] = s.sizes[out];
  for (int k = 0; k < s.operands; ++k) strides[k][0] = s.strides[k][out];
  for (int d = n - 2; d >= 0; --d) {
    bool mergeable = true;
    for (int k = 0; k < s.operands && mergeable; ++k)
      mergeable = s.strides[k][d] == sizes[m] * strides[k][m];
    if (mergeable) {
      sizes[m] *= s.sizes[d];
    } else {
      ++m;
      sizes[m] = s.sizes[d];
      for (int k = 0; k < s.operands; ++k) strides[k][m] = s.strides[k][d];
    }
  }
  s.ndim = m + 1;
  for (int i = 0; i <= m; ++i) {
    s.sizes[i] = sizes[m - i];
    for (int k = 0; k < s.operands; ++k) s.strides[k][i] = strides[k][m - i];
  }
}

}  // namespace jitops
