// Users' own kernels (jitops.RawKernel, RawModule, Template) as a kernel
// family: a registered program is the user's source, their NVRTC options and
// the functions they name; a spec names a program and one of its functions.
//
// The specialized source holds no process-local number (program ids differ
// between processes), so two processes compiling the same program share one
// disk-cache entry.
#pragma once
#include <string>
#include <vector>

#include "jit/kernel_spec.h"

namespace jitops {

struct UserProgram {
  std::string name;                           // the kernel's or module's name, for messages
  std::string code;                           // the user's CUDA C++
  bool with_tensor_header = false;            // Template: jitops/tensor.cuh comes first
  std::vector<std::string> options;           // NVRTC options after the defaults
  std::vector<std::string> name_expressions;  // the functions: "axpy", "axpy<float, 4>"
};

// Registers (or finds, by content) a program; its id is stable in this process.
int register_user_program(const UserProgram& program);
UserProgram user_program(int id);

// The spec of function `function` (an index into name_expressions) of program `id`.
KernelSpec user_kernel_spec(int id, int function);
int user_spec_program(const KernelSpec& spec);

const KernelFamilyInfo& user_family_info();

}  // namespace jitops
