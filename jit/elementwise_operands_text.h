// How an elementwise kernel's source spells its operands, for every loop that
// generates one (jit/elementwise_source.cpp, jit/elementwise_tile_source.cpp):
// their types, pointers, and the call of the operation on one element.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "jit/kernel_spec.h"

namespace jitops {

struct ElementwiseOperandsText {
  int inputs = 0;
  int operands = 0;  // inputs, then outputs
  bool load_outputs = false;
  uint32_t scalars = 0;            // bit k: operand k is a number, s<k> in the kernel
  std::vector<std::string> types;  // each operand's CUDA type

  explicit ElementwiseOperandsText(const KernelSpec& spec);

  bool scalar(int k) const { return (scalars >> k) & 1; }
  // The kernel reads operand k from memory: an input, or an output that starts as the caller's values.
  bool reads(int k) const { return !scalar(k) && (k < inputs || load_outputs); }
  // "static_cast<const float*>(p.data[k])" (outputs not const).
  std::string pointer(int k) const;
  // "const float s2 = ...;" for each number operand, at the top of the kernel.
  std::string scalar_declarations() const;
  // "jitops_operation(a0, a1, ...);" with operand k's argument arg(k) (numbers are s<k>).
  std::string call(const std::function<std::string(int)>& arg) const;
};

inline std::string operand_name(const char* prefix, int k) { return prefix + std::to_string(k); }

// The tile regime's loop over tiles (kTileA > 0), inside the kernel's body.
std::string tiled_elementwise_loop(const KernelSpec& spec, const ElementwiseOperandsText& text);

}  // namespace jitops
