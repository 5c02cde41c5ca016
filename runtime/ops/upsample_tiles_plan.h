// upsample_nearest2d backward's tile kernel (templates/upsample_tiles.cuh):
// when it applies, and its tile shape, shared memory and grid.
#pragma once
#include "runtime/launch.h"
#include "runtime/ops/upsample_ops.h"
#include "runtime/tensor_desc.h"

namespace jitops {

// The widest window `scale` gives over `size` input elements, edges rounded
// as PyTorch rounds them (float products): scale for an integer scale,
// ceil(scale) otherwise (one more where a scale just under an integer meets
// products big enough to round across it); 0 (any width: a plain loop) past
// 4, or where products reach 2^24.
int widest_window(float scale, int64_t size);

// Fills `plan` and returns true where the tile kernel takes the backward:
// grad_input dense NCHW, or channels-last with a pixel under 32 bytes;
// grad_output's rows dense in the same order; windows wider than one column
// (scale_w > 1); a tile that fits the staging budget and stages enough. The caller has set the
// spec's family, element and offset fields.
template <int Bits>
bool plan_upsample_tiles(const TensorDesc& grad_output, const TensorDesc& grad_input, const UpsampleGeometry& g,
                         const DeviceInfo& device, LaunchPlan& plan);

// Off: those cases go to the row kernels, as before the tile kernel (probes
// time one against the other). Returns the previous setting.
bool set_upsample_tiles(bool on);
// The narrowest output-gradient row (bytes) the tiles take (default 256); returns the previous value.
// Tests set 0 to run the tile kernel on small shapes.
int set_upsample_tile_min_row_bytes(int bytes);
// The least shared memory (bytes: index tables and staged rows) of the heuristic's tile that the tiles
// take (default 2048); returns the previous value. Tests set 0 to run the tile kernel on small shapes.
int set_upsample_tile_min_bytes(int bytes);

}  // namespace jitops
