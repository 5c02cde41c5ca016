// What jitops sets up in a module of a user's kernel (KernelFamily::User)
// beyond loading it: the index-error slot jitops::check_index reports into,
// and the sizes of the kernel's parameters, read from the driver, so a call
// whose arguments do not fit is refused instead of launched.
#pragma once
#include <cuda.h>

#include <string>
#include <vector>

namespace jitops {

struct LoadedKernel;

struct UserModuleInfo {
  std::vector<size_t> param_sizes;  // of the spec's function; empty with param_sizes_known false
  bool param_sizes_known = false;   // the driver has cuFuncGetParamInfo (CUDA 12.4+)
  CUdeviceptr error_slot = 0;       // jitops_user_error_slot, where the source defines it
};

// Reads the module's facts and writes its kernel code (named `name`) for check_index.
UserModuleInfo setup_user_module(CUmodule module, CUfunction function, const std::string& name);

// Points the module's error slot at the device's slot, or at nothing while
// index checks are off; cheap when the mode has not changed since.
void refresh_user_error_slot(const LoadedKernel& kernel);

}  // namespace jitops
