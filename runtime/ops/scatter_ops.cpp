#include "runtime/ops/scatter_ops.h"

#include "jit/scatter_source.h"
#include "jitops/scatter_params.h"
#include "runtime/arg_error.h"
#include "runtime/ops/gather_ops.h"
#include "runtime/ops/scatter_mean.h"

namespace jitops {
namespace {

// Self's span in element offsets relative to its pointer.
void self_span(const TensorDesc& self, ScatterProblem& p) {
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < self.ndim; ++d) {
    int64_t ext = (self.shape[d] - 1) * self.strides[d];
    (ext < 0 ? lo : hi) += ext;
  }
  p.self_lo = lo;
  p.self_hi = hi;
}

ScatterProblem base(const TensorDesc& self, const TensorDesc& index, int op, int op_code, bool arithmetic) {
  ScatterProblem p;
  p.element = scatter_element_for(self.dtype, op_name(op_code), arithmetic);
  p.element_bytes = self.element_bytes();
  p.index_bytes = index.element_bytes();
  p.self = self.data;
  p.index = index.data;
  p.op = op;
  p.op_code = op_code;
  p.space.operands = kScatterOperands;
  self_span(self, p);
  p.self_numel = self.numel();
  return p;
}

int dim_size(const TensorDesc& t, int d) { return t.ndim == 0 ? 1 : int(t.shape[d]); }

}  // namespace

int scatter_element_for(DType dtype, const char* op, bool arithmetic) {
  switch (dtype) {
    case DType::Int8: return kElemInt8;
    case DType::UInt8: return kElemUInt8;
    case DType::Int16: return kElemInt16;
    case DType::Int32: return kElemInt32;
    case DType::Int64: return kElemInt64;
    case DType::Float16: return kElemFloat16;
    case DType::BFloat16: return kElemBFloat16;
    case DType::Float32: return kElemFloat32;
    case DType::Float64: return kElemFloat64;
    default: break;
  }
  if (!arithmetic) {  // copies and fills move bits: any element of the same width
    switch (dtype_info(dtype).bytes()) {
      case 1: return kElemUInt8;
      case 2: return kElemInt16;
      case 4: return kElemInt32;
      case 8: return kElemInt64;
    }
  }
  throw type_error(std::string("self: ") + op + " supports int8, uint8, int16, int32, int64, float16, bfloat16, "
                   "float32 and float64" + (arithmetic ? "" : " and other types up to 8 bytes") + " (got " +
                   dtype_info(dtype).name + ")");
}

void check_self_distinct(const TensorDesc& self) {
  if (self.numel() == 0) return;  // nothing to write, nothing to overlap
  for (int d = 0; d < self.ndim; ++d)
    if (self.strides[d] == 0 && self.shape[d] > 1)
      throw value_error("self: expected an array whose elements do not overlap, as an in-place op writes it (got a "
                        "zero stride on dimension " + std::to_string(d) + " of size " + std::to_string(self.shape[d]) +
                        ")");
}

ScatterProblem index_add_problem(const TensorDesc& self, int64_t dim, const TensorDesc& index,
                                 const TensorDesc& source, int op, int op_code) {
  const char* name = op_name(op_code);
  int d = normalize_dim(dim, self.ndim, "dim");
  check_index_dtype(index, "index");
  if (index.ndim > 1)
    throw value_error("index: expected a 0-d or 1-d array (got shape " + shape_str(index) + ")");
  if (source.dtype != self.dtype)
    throw type_error(std::string("source: expected dtype ") + dtype_info(self.dtype).name + " like self (got " +
                     dtype_info(source.dtype).name + ")");
  const int sn = source.ndim == 0 ? 1 : source.ndim, xn = self.ndim == 0 ? 1 : self.ndim;
  bool ok = sn == xn;
  for (int i = 0; ok && i < xn; ++i)
    ok = i == d ? dim_size(source, i) == index.numel() : dim_size(source, i) == dim_size(self, i);
  if (!ok)
    throw value_error(std::string("source: expected self's shape ") + shape_str(self) + " with dimension " +
                      std::to_string(d) + " of size len(index) = " + std::to_string(index.numel()) + " (got " +
                      shape_str(source) + ") in " + name);
  check_self_distinct(self);
  ScatterProblem p = base(self, index, op, op_code, op != kScatterCopy);
  p.src = source.data;
  const int64_t index_stride = index.ndim == 1 ? index.strides[0] : 1;
  int64_t cstrides[kMaxTensorDims];
  counts_strides(self, cstrides);  // where each element's count lives
  IterationSpace& s = p.space;
  s.ndim = xn;
  for (int i = 0; i < xn; ++i) {
    s.sizes[i] = dim_size(source, i);
    s.strides[kSelfOperand][i] = i == d || self.ndim == 0 ? 0 : self.strides[i];
    s.strides[kSrcOperand][i] = source.ndim == 0 ? 0 : source.strides[i];
    s.strides[kIndexOperand][i] = i == d ? index_stride : 0;
    s.strides[kCountsOperand][i] = i == d || self.ndim == 0 ? 0 : cstrides[i];  // destination ids (deterministic)
    s.strides[kIndexPositionOperand][i] = i == d && index.ndim == 1 ? 1 : 0;
  }
  p.axis_size = dim_size(self, d);
  p.axis_stride = self.ndim == 0 ? 0 : self.strides[d];
  p.counts_axis_stride = self.ndim == 0 ? 0 : cstrides[d];
  return p;
}

ScatterProblem index_fill_problem(const TensorDesc& self, int64_t dim, const TensorDesc& index, const Scalar& value) {
  int d = normalize_dim(dim, self.ndim, "dim");
  check_index_dtype(index, "index");
  if (index.ndim > 1)
    throw value_error("index: expected a 0-d or 1-d array (got shape " + shape_str(index) + ")");
  check_self_distinct(self);
  ScatterProblem p = base(self, index, kScatterFill, kOpIndexFill, false);
  encode_scalar(self.dtype, value, p.value);
  const int64_t index_stride = index.ndim == 1 ? index.strides[0] : 1;
  IterationSpace& s = p.space;
  const int xn = self.ndim == 0 ? 1 : self.ndim;
  s.ndim = xn;
  for (int i = 0; i < xn; ++i) {
    s.sizes[i] = i == d ? index.numel() : dim_size(self, i);
    s.strides[kSelfOperand][i] = i == d || self.ndim == 0 ? 0 : self.strides[i];
    s.strides[kSrcOperand][i] = 0;
    s.strides[kIndexOperand][i] = i == d ? index_stride : 0;
    s.strides[kCountsOperand][i] = 0;
    s.strides[kIndexPositionOperand][i] = i == d && index.ndim == 1 ? 1 : 0;
  }
  p.axis_size = dim_size(self, d);
  p.axis_stride = self.ndim == 0 ? 0 : self.strides[d];
  p.axis_dim = d;
  return p;
}

ScatterProblem scatter_problem(const TensorDesc& self, int64_t dim, const TensorDesc& index, const TensorDesc& src,
                               int op, int op_code) {
  int d = normalize_dim(dim, self.ndim, "dim");
  check_index_dtype(index, "index");
  if (src.dtype != self.dtype)
    throw type_error(std::string("src: expected dtype ") + dtype_info(self.dtype).name + " like self (got " +
                     dtype_info(src.dtype).name + ")");
  const int xn = self.ndim == 0 ? 1 : self.ndim;
  if ((index.ndim == 0 ? 1 : index.ndim) != xn || (src.ndim == 0 ? 1 : src.ndim) != xn)
    throw value_error("index: expected index, src and self to have the same number of dimensions (got " +
                      std::to_string(index.ndim) + ", " + std::to_string(src.ndim) + " and " +
                      std::to_string(self.ndim) + ")");
  for (int i = 0; i < xn; ++i) {
    if (dim_size(index, i) > dim_size(src, i) || (i != d && dim_size(index, i) > dim_size(self, i)))
      throw value_error("index: size " + std::to_string(dim_size(index, i)) + " of dimension " + std::to_string(i) +
                        " exceeds " + (dim_size(index, i) > dim_size(src, i) ? "src's" : "self's") + " (index " +
                        shape_str(index) + ", src " + shape_str(src) + ", self " + shape_str(self) + ")");
  }
  check_self_distinct(self);
  ScatterProblem p = base(self, index, op, op_code, true);
  p.src = src.data;
  int64_t cstrides[kMaxTensorDims];
  counts_strides(self, cstrides);  // where each element's count lives
  int64_t positions[kMaxTensorDims];
  index.c_order_strides(positions);
  IterationSpace& s = p.space;
  s.ndim = xn;
  for (int i = 0; i < xn; ++i) {
    s.sizes[i] = dim_size(index, i);
    s.strides[kIndexPositionOperand][i] = index.ndim == 0 ? 0 : positions[i];
    s.strides[kSelfOperand][i] = i == d || self.ndim == 0 ? 0 : self.strides[i];
    s.strides[kSrcOperand][i] = src.ndim == 0 ? 0 : src.strides[i];
    s.strides[kIndexOperand][i] = index.ndim == 0 ? 0 : index.strides[i];
    s.strides[kCountsOperand][i] = i == d || self.ndim == 0 ? 0 : cstrides[i];
  }
  p.axis_size = dim_size(self, d);
  p.axis_stride = self.ndim == 0 ? 0 : self.strides[d];
  p.counts_axis_stride = self.ndim == 0 ? 0 : cstrides[d];
  return p;
}

ScatterProblem mean_pass_problem(const TensorDesc& self, int* counts, int op, bool include_self) {
  ScatterProblem p;
  p.element = scatter_element_for(self.dtype, "scatter_reduce_", true);
  p.element_bytes = self.element_bytes();
  p.self = self.data;
  p.counts = counts;
  p.op = op;
  p.op_code = kOpScatterReduce;
  p.include_self = include_self;
  p.axis_size = 1;
  int64_t cstrides[kMaxTensorDims];
  counts_strides(self, cstrides);  // where each element's count lives
  IterationSpace& s = p.space;
  s.operands = kScatterOperands;
  s.ndim = self.ndim;
  for (int i = 0; i < self.ndim; ++i) {
    s.sizes[i] = self.shape[i];
    s.strides[kSelfOperand][i] = self.strides[i];
    s.strides[kSrcOperand][i] = 0;
    s.strides[kIndexOperand][i] = 0;
    s.strides[kCountsOperand][i] = cstrides[i];
    s.strides[kIndexPositionOperand][i] = 0;
  }
  self_span(self, p);
  return p;
}

int reduce_op(const std::string& reduce) {
  if (reduce == "sum" || reduce == "mean") return kScatterAdd;
  if (reduce == "prod") return kScatterMul;
  if (reduce == "amax") return kScatterMax;
  if (reduce == "amin") return kScatterMin;
  throw value_error("reduce: expected 'sum', 'prod', 'mean', 'amax' or 'amin' (got '" + reduce + "')");
}

}  // namespace jitops
