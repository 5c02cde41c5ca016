#include "runtime/launch_shape.h"

#include <algorithm>
#include <cstdint>

#include "runtime/arg_error.h"
#include "runtime/int_math.h"
#include "runtime/launch.h"

namespace jitops {

LaunchShape choose_launch_shape(const IterationSpace& s, const DeviceInfo& device, const LaunchTuning& tuning,
                                bool one_row_block, unsigned max_lanes_x) {
  LaunchShape shape;
  const int ndim = s.ndim;
  shape.dims = ndim <= kSpecializedDims ? ndim : 0;
  const bool two_d = shape.dims == 2;
  const int64_t rows = s.sizes[0], cols = two_d ? s.sizes[1] : 1;
  const unsigned bx = !two_d ? unsigned(tuning.threads)
                      : std::min(max_lanes_x, cols <= 32 ? unsigned(pow2_at_least(cols))
                                                         : unsigned(std::min<int64_t>((cols + 31) / 32 * 32, tuning.threads)));
  const unsigned by = !two_d || one_row_block ? 1u : std::max(1u, unsigned(tuning.threads) / bx);
  const int64_t gx = two_d ? (cols + bx - 1) / bx : 1;
  auto blocks_at = [&](int unroll) {
    if (two_d) return gx * ((rows + int64_t(by) * unroll - 1) / (int64_t(by) * unroll));
    return (s.numel() + int64_t(tuning.threads) * unroll - 1) / (int64_t(tuning.threads) * unroll);
  };
  int unroll = tuning.unroll;
  if (!one_row_block)
    while (tuning.adapt_unroll && unroll > 1 && blocks_at(unroll) < 2 * int64_t(device.sm_count)) unroll /= 2;
  shape.unroll = unroll;
  if (two_d) {
    unsigned gy = 1;
    if (!one_row_block) {
      unsigned total = grid_blocks(rows * gx, int64_t(by) * unroll, int(bx * by), device, tuning.waves);
      gy = std::max(1u, std::min(65535u, total / unsigned(std::max<int64_t>(1, gx))));
      gy = std::min<unsigned>(gy, unsigned((rows + int64_t(by) * unroll - 1) / (int64_t(by) * unroll)));
    }
    shape.block[0] = bx;
    shape.block[1] = by;
    shape.grid[0] = unsigned(gx);
    shape.grid[1] = std::max(1u, gy);
  } else {
    shape.block[0] = unsigned(tuning.threads);
    shape.grid[0] = grid_blocks(s.numel(), int64_t(tuning.threads) * unroll, tuning.threads, device, tuning.waves);
  }
  return shape;
}

}  // namespace jitops
