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

}  // namespace jitops
