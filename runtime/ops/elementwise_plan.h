// Planning of the elementwise family: operands broadcast to one shape, then
// the dense packed layout when every array operand is dense in one order and
// aligned, the strided layout otherwise.
#pragma once
#include <vector>

#include "jit/elementwise_source.h"
#include "jitops/elementwise_params.h"
#include "runtime/launch.h"
#include "runtime/tensor_desc.h"

namespace jitops {

struct ElementwiseProblem {
  int operation = 0;  // ElementwiseBuiltin or a registered user operation
  int inputs = 0;
  int outputs = 0;
  bool load_outputs = false;
  int ndim = 0;  // the broadcast shape
  int64_t shape[kMaxTensorDims] = {};
  DType dtypes[kMaxElementwiseOperands] = {};
  bool scalar[kMaxElementwiseOperands] = {};
  uint64_t scalar_bits[kMaxElementwiseOperands] = {};
  const TensorDesc* arrays[kMaxElementwiseOperands] = {};  // array operands (nullptr for scalars)
};

// Grid cap in waves of resident blocks (OneFlow's kNumWaves).
constexpr int kElementwiseWaves = 32;

// numpy broadcasting of `a` into `shape` (ndim, sizes); ValueError naming `name`.
void broadcast_into(const TensorDesc& a, const char* name, int& ndim, int64_t* shape);

// The memory order (outermost dim first) for outputs of broadcast shape
// (ndim, shape), following the inputs' layout as PyTorch's TensorIterator and
// numpy's order='K' do; empty for C order.
std::vector<int> inputs_memory_order(const TensorDesc* const* inputs, int count, int ndim, const int64_t* shape);

// False when there is nothing to launch (an empty shape).
bool plan_elementwise(const ElementwiseProblem& problem, const DeviceInfo& device, LaunchPlan& plan);

}  // namespace jitops
