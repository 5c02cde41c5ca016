// The accumulate-family ops as the core sees them: argument checks and the
// iteration spaces they reduce to (all in place on self).
//   index_add_(self, dim, index, source, alpha)    torch.Tensor.index_add_
//   index_copy_(self, dim, index, source)          torch.Tensor.index_copy_
//   index_fill_(self, dim, index, value)           torch.Tensor.index_fill_
//   scatter_add_(self, dim, index, src)            torch.Tensor.scatter_add_
//   scatter_reduce_(self, dim, index, src, reduce, include_self)
#pragma once
#include <string>

#include "runtime/op_codes.h"
#include "runtime/ops/scatter_plan.h"
#include "runtime/scalar.h"
#include "runtime/tensor_desc.h"

namespace jitops {

// The kernel element for `dtype`; TypeError naming `arg` when the op cannot take it.
int scatter_element_for(DType dtype, const char* op, bool arithmetic);

// Checks self is writable through distinct elements (no zero stride on a dim longer than 1).
void check_self_distinct(const TensorDesc& self);

// index_add_ (op kScatterAdd) and index_copy_ (kScatterCopy).
ScatterProblem index_add_problem(const TensorDesc& self, int64_t dim, const TensorDesc& index,
                                 const TensorDesc& source, int op, int op_code);
ScatterProblem index_fill_problem(const TensorDesc& self, int64_t dim, const TensorDesc& index, const Scalar& value);
// scatter_add_ / scatter_reduce_: the reduction `op` (kScatterAdd/Mul/Max/Min, or Prepare for its first pass).
ScatterProblem scatter_problem(const TensorDesc& self, int64_t dim, const TensorDesc& index, const TensorDesc& src,
                               int op, int op_code);
// The mean's passes over self's own elements with their counts: the last (kScatterMeanFinish, dividing
// by them) and, for include_self=False, the reset before the adds (kScatterMeanReset).
ScatterProblem mean_pass_problem(const TensorDesc& self, int* counts, int op, bool include_self);

// "sum", "prod", "mean", "amax", "amin" -> ScatterOp (mean sums); ValueError otherwise.
int reduce_op(const std::string& reduce);

}  // namespace jitops
