// scatter_reduce_(reduce="mean")'s counts: where each self element's count
// lives, and when include_self=False resets self from the counts in a dense
// pass rather than with an identity store at every unit.
#pragma once
#include <cstdint>

#include "runtime/device_context.h"
#include "runtime/tensor_desc.h"

namespace jitops {

// Dense strides in self's memory order (memory_order on self's strides, the
// widest outside), so that every pass reaches a count where it reaches its
// self element.
void counts_strides(const TensorDesc& self, int64_t* out);

// Whether include_self=False's reset goes through the counts: a pass that
// counts only, then one over self that zeroes the elements counted.
bool mean_reset_by_counts(int64_t units);

// Whether include_self=True's counts may come from the adds' own pass (each
// unit counted beside its add) rather than a pass of their own before it:
// where self and its counts together stay within half the L2. The caller
// also keeps the pass of its own for 16-bit adds in packs from
// kMeanPackedUnits units (counting takes the adds one element at a time).
bool mean_counts_with_adds(const TensorDesc& self, const DeviceInfo& device);
constexpr int64_t kMeanPackedUnits = int64_t(1) << 22;

// Development knobs, for measurement: counts in self's memory order and the
// finish pass walked that way (1, the default) or in C order (0); the reset
// by counts where it pays (-1), never (0) or always (1).
int mean_memory_order();
void set_mean_memory_order(int mode);
int mean_reset_mode();
void set_mean_reset_mode(int mode);
// The counts with the adds (1, the default) or in a pass of their own (0).
void set_mean_counts_with_adds(int mode);
// Elements a thread of the passes over self (finish and reset) takes at once:
// their counts loaded together, then their self elements (default 4; 1, 2 or
// 4, a value between taken down to the one below).
int mean_finish_unroll();
int set_mean_finish_unroll(int unroll);  // returns the previous value

}  // namespace jitops
