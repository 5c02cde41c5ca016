// upsample_nearest2d forward and backward as the core sees them: sizes and
// scales resolved as torch.nn.functional.interpolate(mode="nearest") does,
// then a plan: the exact-2x kernels for dense NCHW; for other dense results
// the backward's tile kernel where windows are wider than a column
// (upsample_tiles_plan.h), the row kernels otherwise; generic ones for the rest.
#pragma once
#include <array>
#include <optional>

#include "runtime/launch.h"
#include "runtime/tensor_desc.h"

namespace jitops {

struct UpsampleGeometry {
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  // The scales the kernels use, computed as PyTorch computes them (float).
  float forward_scale_h = 0, forward_scale_w = 0;    // in / out, or 1 / scale_factor
  float backward_scale_h = 0, backward_scale_w = 0;  // out / in, or scale_factor
};

// From x's (or the input's) height and width and either `size` or `scale_factor`.
UpsampleGeometry upsample_geometry(int64_t in_h, int64_t in_w, const std::optional<std::array<int64_t, 2>>& size,
                                   const std::optional<std::array<double, 2>>& scale_factor);

// Checks x (4-D, a supported dtype); TypeError/ValueError naming `name`.
void check_upsample_operand(const TensorDesc& x, const char* name);

// True when `t` (4-D) is dense in channels-last order and not in NCHW order:
// outputs then keep that layout, as PyTorch's do.
bool is_channels_last(const TensorDesc& t);

// False when there is nothing to launch.
bool plan_upsample_forward(const TensorDesc& x, const TensorDesc& out, const UpsampleGeometry& g,
                           const DeviceInfo& device, LaunchPlan& plan);
bool plan_upsample_backward(const TensorDesc& grad_output, const TensorDesc& grad_input, const UpsampleGeometry& g,
                            const DeviceInfo& device, LaunchPlan& plan);

// Development knob: the row kernels' blocks fitted to their rows (on, the
// default) or a power of two of lanes a row; returns the previous setting.
bool set_upsample_fitted_rows(bool on);

}  // namespace jitops
