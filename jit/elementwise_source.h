// Specialization of templates/elementwise.cuh: the fields of an elementwise
// spec, the built-in binary ops, and the registry of user operations
// (jitops.ElementwiseKernel), which a spec names by number.
#pragma once
#include <string>
#include <vector>

#include "jit/kernel_spec.h"

namespace jitops {

struct ElementwiseSpecFields {
  enum : int {
    kOperation = 0,  // ElementwiseBuiltin, or a registered user operation
    kInputs,         // inputs come first among the operands
    kOutputs,
    kPack,           // elements per pack (1, 2, 4, 8, 16): dense, or along a strided layout's dense inner dim
    kDims,           // 0: dense; 1..3: strided or tiled with that many dims; 16: generic strided or tiled
    kMaxThreads,
    kScalarMask,     // bit k: operand k is a scalar
    kDTypes,         // 4 bits per operand: its DType
    kLoadOutputs,    // 1: outputs start as the caller's out= values (user operations)
    kOffsetBits,     // strided layouts: 32 (FastDivmod) or 64-bit offsets
    kUniformMask,    // bit k: array operand k is the same along the packed dim (stride 0), read once per item
    kUnroll,         // strided layouts: items a thread loads before it computes and stores any
    kTileA,          // the tile regime (0: not tiled): tile elements along the walk's inner dim a
    kTileB,          // ... and along b, the dim the staged operands are dense in
    kStagedMask,     // bit k: operand k moves through shared memory, along b
    kTileBatchFirst, // 1: tiles numbered over the batch before b (an input broadcast along a batch dim)
  };
};

// kEwMulGradients, kEwDivGradients: mul's and div's two gradients from one read of the upstream gradient,
// (g, x, y) -> (g * y, g * x) or (g / y, -g * ((x / y) / y)) (PyTorch's formulas, in one rounding): the C++
// autograd nodes' backward in one launch instead of two or five (python/bindings/core_native.h).
enum ElementwiseBuiltin : int {
  kEwAdd = 1, kEwSub, kEwMul, kEwDiv, kEwMaximum, kEwMinimum, kEwMulGradients, kEwDivGradients
};

// The first id of user operations; built-ins are below it.
constexpr int kFirstUserOperation = 1000;

struct ElementwiseOperation {
  std::string name;                      // a C identifier: kernel name in error messages
  std::vector<std::string> param_names;  // inputs, then outputs
  std::vector<std::string> param_types;  // a dtype name, or a placeholder such as "T"
  int inputs = 0;
  std::string operation;                 // C++ statements over the parameter names
  std::string preamble;                  // C++ placed before the kernel (helper functions)
};

// Registers (or finds) a user operation; returns its id, stable in this process.
int register_elementwise_operation(const ElementwiseOperation& op);
ElementwiseOperation elementwise_operation(int id);

// The CUDA C++ name of a dtype's element ("float", "__half", ...), or nullptr.
const char* cuda_type_name(int dtype);
// The same, for a spec that must name one: logic_error naming `family` otherwise.
const char* required_cuda_type_name(int dtype, const char* family);

const KernelFamilyInfo& elementwise_family_info();

}  // namespace jitops
