#include "runtime/collapse.h"

namespace jitops {

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
