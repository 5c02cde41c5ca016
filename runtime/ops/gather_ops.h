// The gather-family ops as the core sees them: argument checks, output
// shapes, and the iteration space each op reduces to.
//   index_select(x, dim, index)   torch.index_select
//   take(x, index, axis)          numpy.take / ONNX Gather (negative indices wrap)
//   gather(x, dim, index)         torch.gather / numpy.take_along_axis
#pragma once
#include <optional>
#include <vector>

#include "runtime/op_codes.h"
#include "runtime/ops/gather_plan.h"
#include "runtime/tensor_desc.h"

namespace jitops {


// Wraps a negative dim; IndexError naming `arg` when out of range.
int normalize_dim(int64_t dim, int ndim, const char* arg);

// TypeError unless `index` holds int32 or int64.
void check_index_dtype(const TensorDesc& index, const char* arg);

std::vector<int64_t> index_select_shape(const TensorDesc& x, int64_t dim, const TensorDesc& index);
GatherProblem index_select_problem(const TensorDesc& out, const TensorDesc& x, int64_t dim, const TensorDesc& index);

std::vector<int64_t> take_shape(const TensorDesc& x, const TensorDesc& index, std::optional<int64_t> axis);
GatherProblem take_problem(const TensorDesc& out, const TensorDesc& x, const TensorDesc& index,
                           std::optional<int64_t> axis);

std::vector<int64_t> gather_shape(const TensorDesc& x, int64_t dim, const TensorDesc& index);
GatherProblem gather_problem(const TensorDesc& out, const TensorDesc& x, int64_t dim, const TensorDesc& index);

}  // namespace jitops
