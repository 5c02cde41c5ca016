#include "runtime/ops/gather_ops.h"

#include "runtime/arg_error.h"
#include <string>

namespace jitops {
namespace {

GatherProblem base_problem(const TensorDesc& out, const TensorDesc& x, const TensorDesc& index, int op) {
  GatherProblem p;
  p.out = out.data;
  p.x = x.data;
  p.index = index.data;
  p.element_bytes = x.element_bytes();
  p.index_bytes = index.element_bytes();
  p.op_code = op;
  p.space.operands = kGatherOperands;
  p.space.ndim = out.ndim;
  for (int d = 0; d < out.ndim; ++d) {
    p.space.sizes[d] = out.shape[d];
    p.space.strides[kOut][d] = out.strides[d];
    p.space.strides[kIndexPosition][d] = 0;
  }
  return p;
}

}  // namespace

int normalize_dim(int64_t dim, int ndim, const char* arg) {
  int n = ndim == 0 ? 1 : ndim;  // a 0-d tensor is indexed like a 1-element vector
  if (dim < -n || dim >= n)
    throw index_error(std::string(arg) + ": expected a dimension in [" + std::to_string(-n) + ", " +
                      std::to_string(n - 1) + "] (got " + std::to_string(dim) + ")");
  return int(dim < 0 ? dim + n : dim);
}

void check_index_dtype(const TensorDesc& index, const char* arg) {
  if (index.dtype != DType::Int32 && index.dtype != DType::Int64)
    throw type_error(std::string(arg) + ": expected an int32 or int64 array (got " + dtype_info(index.dtype).name + ")");
}

std::vector<int64_t> index_select_shape(const TensorDesc& x, int64_t dim, const TensorDesc& index) {
  int d = normalize_dim(dim, x.ndim, "dim");
  check_index_dtype(index, "index");
  if (index.ndim > 1)
    throw value_error("index: expected a 0-d or 1-d array (got " + std::to_string(index.ndim) + " dimensions, shape " +
                      shape_str(index) + ")");
  if (x.ndim == 0) {
    if (index.numel() != 1)
      throw value_error("index: expected one element to select from a 0-d x (got " +
                        std::to_string(index.numel()) + ")");
    return {};
  }
  std::vector<int64_t> shape(x.shape, x.shape + x.ndim);
  shape[d] = index.numel();
  return shape;
}

GatherProblem index_select_problem(const TensorDesc& out, const TensorDesc& x, int64_t dim, const TensorDesc& index) {
  int d = normalize_dim(dim, x.ndim, "dim");
  GatherProblem p = base_problem(out, x, index, kOpIndexSelect);
  const int64_t index_stride = index.ndim == 1 ? index.strides[0] : 1;
  if (x.ndim == 0) {
    p.space.ndim = 1;
    p.space.sizes[0] = 1;
    p.space.strides[kOut][0] = 1;
    p.space.strides[kX][0] = 0;
    p.space.strides[kIndex][0] = index_stride;
    p.space.strides[kIndexPosition][0] = 0;
    p.axis_size = 1;
    p.axis_stride = 0;
    return p;
  }
  for (int i = 0; i < x.ndim; ++i) {
    p.space.strides[kX][i] = i == d ? 0 : x.strides[i];
    p.space.strides[kIndex][i] = i == d ? index_stride : 0;
    p.space.strides[kIndexPosition][i] = i == d ? 1 : 0;
  }
  p.axis_size = x.shape[d];
  p.axis_stride = x.strides[d];
  return p;
}

std::vector<int64_t> take_shape(const TensorDesc& x, const TensorDesc& index, std::optional<int64_t> axis) {
  check_index_dtype(index, "indices");
  std::vector<int64_t> shape;
  if (!axis) return std::vector<int64_t>(index.shape, index.shape + index.ndim);
  if (x.ndim == 0) throw index_error("axis: x is 0-d and has no axis " + std::to_string(*axis) + "; use axis=None");
  int a = normalize_dim(*axis, x.ndim, "axis");
  for (int i = 0; i < a; ++i) shape.push_back(x.shape[i]);
  for (int i = 0; i < index.ndim; ++i) shape.push_back(index.shape[i]);
  for (int i = a + 1; i < x.ndim; ++i) shape.push_back(x.shape[i]);
  if (int(shape.size()) > kMaxTensorDims)
    throw value_error("indices: the result would have " + std::to_string(shape.size()) + " dimensions (at most " +
                      std::to_string(kMaxTensorDims) + ")");
  return shape;
}

GatherProblem take_problem(const TensorDesc& out, const TensorDesc& x, const TensorDesc& index,
                           std::optional<int64_t> axis) {
  GatherProblem p = base_problem(out, x, index, kOpTake);
  p.wrap = true;
  int64_t positions[kMaxTensorDims];
  index.c_order_strides(positions);
  if (!axis) {
    // Flat take: the index counts elements of x in C order.
    for (int i = 0; i < index.ndim; ++i) {
      p.space.strides[kX][i] = 0;
      p.space.strides[kIndex][i] = index.strides[i];
      p.space.strides[kIndexPosition][i] = positions[i];
    }
    p.axis_size = x.numel();
    IterationSpace& xs = p.x_layout;
    xs.operands = 1;
    xs.ndim = x.ndim;
    for (int i = 0; i < x.ndim; ++i) {
      xs.sizes[i] = x.shape[i];
      xs.strides[0][i] = x.strides[i];
    }
    collapse(xs);
    if (xs.ndim == 1) {
      p.axis_stride = xs.strides[0][0];  // x is one strided run: an axis take on it
    } else {
      p.flat = true;
    }
    return p;
  }
  int a = normalize_dim(*axis, x.ndim, "axis");
  int o = 0;
  for (int i = 0; i < a; ++i, ++o) {
    p.space.strides[kX][o] = x.strides[i];
    p.space.strides[kIndex][o] = 0;
  }
  for (int i = 0; i < index.ndim; ++i, ++o) {
    p.space.strides[kX][o] = 0;
    p.space.strides[kIndex][o] = index.strides[i];
    p.space.strides[kIndexPosition][o] = positions[i];
  }
  for (int i = a + 1; i < x.ndim; ++i, ++o) {
    p.space.strides[kX][o] = x.strides[i];
    p.space.strides[kIndex][o] = 0;
  }
  p.axis_size = x.shape[a];
  p.axis_stride = x.strides[a];
  return p;
}

std::vector<int64_t> gather_shape(const TensorDesc& x, int64_t dim, const TensorDesc& index) {
  int d = normalize_dim(dim, x.ndim, "dim");
  check_index_dtype(index, "index");
  int xn = x.ndim == 0 ? 1 : x.ndim, in = index.ndim == 0 ? 1 : index.ndim;
  if (xn != in)
    throw value_error("index: expected as many dimensions as x (" + std::to_string(x.ndim) + ") (got " +
                      std::to_string(index.ndim) + ", shape " + shape_str(index) + ")");
  for (int i = 0; i < index.ndim; ++i) {
    if (i != d && index.shape[i] > x.shape[i])
      throw value_error("index: size " + std::to_string(index.shape[i]) + " of dimension " + std::to_string(i) +
                        " exceeds x's size " + std::to_string(x.shape[i]) + " there (index shape " + shape_str(index) +
                        ", x shape " + shape_str(x) + ")");
  }
  return std::vector<int64_t>(index.shape, index.shape + index.ndim);
}

GatherProblem gather_problem(const TensorDesc& out, const TensorDesc& x, int64_t dim, const TensorDesc& index) {
  int d = normalize_dim(dim, x.ndim, "dim");
  GatherProblem p = base_problem(out, x, index, kOpGather);
  if (x.ndim == 0) {
    p.space.ndim = 1;
    p.space.sizes[0] = 1;
    p.space.strides[kOut][0] = 1;
    p.space.strides[kX][0] = 0;
    p.space.strides[kIndex][0] = 1;
    p.space.strides[kIndexPosition][0] = 0;
    p.axis_size = 1;
    p.axis_stride = 0;
    return p;
  }
  int64_t positions[kMaxTensorDims];
  index.c_order_strides(positions);
  for (int i = 0; i < index.ndim; ++i) {
    p.space.strides[kX][i] = i == d ? 0 : x.strides[i];
    p.space.strides[kIndex][i] = index.strides[i];
    p.space.strides[kIndexPosition][i] = positions[i];
  }
  p.axis_size = x.shape[d];
  p.axis_stride = x.strides[d];
  return p;
}

}  // namespace jitops
