// A launch, planned: which kernel, its parameter block and its grid. Planning
// needs no GPU (explain() plans for an architecture alone); launching does.
#pragma once
#include <cuda.h>

#include <cstring>

#include "jit/kernel_spec.h"
#include "runtime/device_context.h"
#include "runtime/tuning.h"

namespace jitops {

struct LoadedKernel;

constexpr size_t kMaxParamBytes = 4096;

struct LaunchPlan {
  KernelSpec spec;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  const char* regime = nullptr;  // set where a family has several (explain() shows it)
  bool tunable = false;          // `tuning` says which configuration runs and why
  ResolvedTuning tuning;
  size_t param_size = 0;
  alignas(16) unsigned char params[kMaxParamBytes];
  // Kernels of several parameters (users' templates): parameter i starts at
  // params + param_offsets[i]; none: params is the kernel's one parameter.
  static constexpr int kMaxKernelParams = 64;
  int param_count = 0;
  uint16_t param_offsets[kMaxKernelParams];
  uint16_t param_sizes[kMaxKernelParams];  // checked against the compiled kernel's where the driver tells

  template <typename P>
  void set_params(const P& p) {
    static_assert(sizeof(P) <= kMaxParamBytes, "kernel parameter block too large");
    std::memcpy(params, &p, sizeof(P));
    param_size = sizeof(P);
  }
};

// Blocks for `work` items at `per_block` items a block, capped at `waves` full
// waves of the device (resident blocks of `threads` threads on every SM).
unsigned grid_blocks(int64_t work, int64_t per_block, int threads, const DeviceInfo& device, int waves);

void launch(const LaunchPlan& plan, const LoadedKernel& kernel, CUstream stream);

}  // namespace jitops
