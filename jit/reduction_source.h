// Specialization of templates/reduction.cuh: the fields of a reduction spec
// and the registry of user reductions (jitops.ReductionKernel), which a spec
// names by number.
#pragma once
#include <string>
#include <vector>

#include "jit/kernel_spec.h"

namespace jitops {

struct ReductionSpecFields {
  enum : int {
    kOperation = 0,  // a registered user reduction (process-local: left out of the source's header)
    kInputs,
    kDTypes,         // 4 bits per operand: inputs, then the output, then the reduce type
    kStrategy,       // ReductionStrategy
    kOffsetBits,     // 32 (FastDivmod) or 64
    kReducedDims,    // 1: one reduced dim after collapsing; 0: any number
    kVector,         // elements a load moves (1, 2, 4, 8): along the reduced dim (inner) or the outputs (outer)
    kGroup,          // inner and finish: lanes per output, a power of two
    kUnroll,         // steps whose loads are in flight together
    kSplit,          // 1: the reduction is split over blockIdx.y; partial results go to scratch
    kMaxThreads,     // __launch_bounds__
  };
};

enum ReductionStrategy : int { kReduceInner = 0, kReduceOuter = 1, kReduceFinish = 2 };

constexpr int kMaxReductionOperands = 5;  // 4 inputs and the output

struct ReductionOperation {
  std::string name;                      // a C identifier, for messages
  std::vector<std::string> param_names;  // inputs, then the output
  std::vector<std::string> param_types;  // a dtype name, or a placeholder such as "T"
  int inputs = 0;
  std::string map_expr, reduce_expr, post_map_expr, identity;
  std::string reduce_type;               // a dtype name or a placeholder
  std::string preamble;
};

int register_reduction_operation(const ReductionOperation& op);
ReductionOperation reduction_operation(int id);
// Stable across processes (tuning files key on it): a hash of the operation's text.
uint32_t reduction_operation_hash(int id);

const KernelFamilyInfo& reduction_family_info();

}  // namespace jitops
