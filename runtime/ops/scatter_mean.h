// scatter_reduce_(reduce="mean")'s counts: where each self element's count
// lives, and when include_self=False resets self from the counts in a dense
// pass rather than with an identity store at every unit.
#pragma once
#include <cstdint>

#include "runtime/tensor_desc.h"

namespace jitops {

// Dense strides in self's memory order (memory_order on self's strides, the
// widest outside), so that every pass reaches a count where it reaches its
// self element.
void counts_strides(const TensorDesc& self, int64_t* out);

// Whether include_self=False's reset goes through the counts: a pass that
// counts only, then one over self that zeroes the elements counted.
bool mean_reset_by_counts(int64_t units);

// Development knobs, for measurement: counts in self's memory order and the
// finish pass walked that way (1, the default) or in C order (0); the reset
// by counts where it pays (-1), never (0) or always (1).
int mean_memory_order();
void set_mean_memory_order(int mode);
int mean_reset_mode();
void set_mean_reset_mode(int mode);

}  // namespace jitops
