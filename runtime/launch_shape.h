// The launch shape of a kernel that walks a collapsed iteration space, shared
// by the gather and accumulate families: a 2-D layout for two collapsed dims
// (threadIdx.x along the inner one, threadIdx.y and the unrolled loop along
// rows), a linear grid-stride layout otherwise.
#pragma once
#include <type_traits>
#include <utility>

#include "runtime/collapse.h"
#include "runtime/device_context.h"

namespace jitops {

// The most waves a configuration names: a grid this deep (a million blocks of
// 256 threads on an H100) covers the units of all but the largest calls.
constexpr int kUncappedWaves = 1024;

struct LaunchTuning {
  int threads = 256;
  int unroll = 4;     // the most units a thread handles at once
  int waves = 16;     // grid cap, in full waves of resident blocks (16 measured best or equal in the sweeps)
  int vector_bytes = 16;  // the widest vector unit a kernel may move, where its source allows a choice
  // Halve unroll until the grid has 2 blocks per SM: a small gather spread
  // over 5 SMs (unroll 4) ran 25% slower than over 20 (unroll 1) on an H200.
  bool adapt_unroll = true;
  // Users' templates: the values of the template parameters they marked
  // tunable, in the order they were declared (none for the built-ins).
  int template_count = 0;
  int template_values[4] = {0, 0, 0, 0};
};

// Collapsed dims up to this many get kernels of their own (the gather,
// accumulate and elementwise families), whose offset loops the compiler
// unrolls with the sizes and strides in registers; more take the kMaxDims
// loop, which tests each dim against ndim. Four elementwise dims that do not
// collapse (a broadcast channel) ran ~1.2x slower through that loop: 16
// sweep plans 1.17x in geomean with their own, up to 1.61x (seed 600's uint8
// minimum of (256x512x4x16), 40.6 -> 25.2 us); 44 gather and accumulate
// plans of 4-5 dims 1.137x, 0.98-1.65x (seed 104's index_select of int16
// (32x2x1024x32x13) transposed, 423.5 -> 270.3 us; H100, NOTES 87).
constexpr int kSpecializedDims = 6;

// Calls f(std::integral_constant<int, D>()) with the parameter block's dims
// for a spec's dims field: D = dims from 1 to kSpecializedDims, kMaxDims for
// anything else (0 or kMaxDims: the generic walk). The one mapping from the
// field the kernel is compiled for to the block the host fills.
template <int D = 1, typename F>
void with_param_dims(int dims, F&& f) {
  if constexpr (D > kSpecializedDims) {
    f(std::integral_constant<int, kMaxDims>());
  } else if (dims == D) {
    f(std::integral_constant<int, D>());
  } else {
    with_param_dims<D + 1>(dims, std::forward<F>(f));
  }
}

struct LaunchShape {
  int dims = 1;    // the spec's dims field: 1 to kSpecializedDims, or 0 for generic
  int unroll = 1;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
};

// `one_row_block`: in the 2-D layout, one block row walks every row (each
// thread loads each row's index once: PyTorch's small-index regime).
// `max_lanes_x`: in the 2-D layout, the most threads along the inner dim (a
// power of two); the rest of the block takes further rows.
LaunchShape choose_launch_shape(const IterationSpace& space, const DeviceInfo& device, const LaunchTuning& tuning,
                                bool one_row_block = false, unsigned max_lanes_x = 1024);

}  // namespace jitops
