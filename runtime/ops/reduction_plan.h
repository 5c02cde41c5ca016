// Planning of user reductions (jitops.ReductionKernel): the broadcast inputs
// split into kept dims (the output's) and reduced dims, each collapsed; then
// the inner or outer layout (templates/reduction.cuh) by which of them is the
// fast one in memory, the vector width, and how far to split the reduced dims
// over blocks so that a reduction with few outputs still fills the GPU.
#pragma once
#include <cstddef>

#include "jit/reduction_source.h"
#include "jitops/reduction_params.h"
#include "runtime/launch.h"
#include "runtime/tensor_desc.h"

namespace jitops {

struct ReductionProblem {
  int operation = 0;
  int inputs = 0;
  DType dtypes[kMaxReductionOperands + 1] = {};  // inputs, the output, the reduce type
  const TensorDesc* in[kMaxReductionInputs] = {};
  const TensorDesc* out = nullptr;
  int ndim = 0;  // the broadcast shape, and which of its dims are reduced
  int64_t shape[kMaxTensorDims] = {};
  bool reduced[kMaxTensorDims] = {};
  // The output's strides along the kept dims, in their order.
  int64_t out_strides[kMaxTensorDims] = {};
};

// Plans the main launch, and the finishing launch when the reduction is split
// (count 2); `scratch_bytes` is what the split's partial results need. Returns
// false when there is nothing to launch (no output element).
bool plan_reduction(const ReductionProblem& problem, const DeviceInfo& device, LaunchPlan (&plans)[2], int& count,
                    size_t& scratch_bytes);

// Points every planned launch at the scratch the caller allocated.
void set_reduction_scratch(LaunchPlan* plans, int count, void* scratch);

}  // namespace jitops
