// Integer helpers the launch planners share.
#pragma once
#include <cstdint>

namespace jitops {

inline int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The smallest power of two at least v (1 for v <= 1).
inline int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Lanes (or a tile's edge) to cover `extent` in as many parts of `width` as
// before, as few a part as cover it, where parts of `width` would leave over a
// quarter of their lanes idle (19 in 32: one part of 19; 300 in 256: two of
// 150); `width` itself otherwise. The elementwise tiles, the accumulate
// family's 2-D blocks and upsample's row blocks fit their widths so.
inline int64_t fitted_width(int64_t extent, int64_t width) {
  const int64_t parts = ceil_div(extent, width);
  if (4 * extent >= 3 * parts * width) return width;
  return ceil_div(extent, parts);
}

}  // namespace jitops
