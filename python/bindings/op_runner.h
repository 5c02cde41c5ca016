// What every op binding does after its arguments are parsed: allocate or
// check out=, plan, then launch, or describe the launch (explain).
#pragma once
#include <pybind11/pybind11.h>

#include <vector>
#include <cstddef>

#include "python/bindings/array_args.h"
#include "runtime/launch.h"

namespace jitops {

// Raises an error an earlier kernel on the call's device recorded (async mode).
void enter_call(const CallArrays& call);

// The caller's out= (checked) or a new output in slot `slot`.
pybind11::object prepare_out(CallArrays& call, size_t slot, size_t like, const std::vector<int64_t>& shape,
                             DType dtype, pybind11::handle out);

// Device facts for planning: the call's GPU, or `explain_arch` when given.
DeviceInfo planning_device(const CallArrays& call, int explain_arch);
// For index kernels (`indices`), none when index checks are off; histc's
// range report is not an index check and always gets the slot.
IndexErrorSlot* planning_error_slot(const CallArrays& call, int explain_arch, bool indices = true);

// Launches the planned kernels on the call's stream (explain_arch < 0) or
// returns a list of dicts describing them. With out_slot kNoOutput the call
// returns None (users' kernels write into the arrays they were given).
constexpr size_t kNoOutput = ~size_t(0);
pybind11::object execute(CallArrays& call, const LaunchPlan* plans, int count, pybind11::object out, size_t out_slot,
                         int explain_arch);

// Describes a spec compiled for `arch` with no launch: the ptx command's view.
pybind11::dict describe_prepared(const KernelSpec& spec, int arch);

}  // namespace jitops
