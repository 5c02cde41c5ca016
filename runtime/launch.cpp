#include "runtime/launch.h"

#include <algorithm>

#include "runtime/driver_api.h"
#include "runtime/kernel_registry.h"

namespace jitops {

unsigned grid_blocks(int64_t work, int64_t per_block, int threads, const DeviceInfo& device, int waves) {
  int64_t needed = (work + per_block - 1) / per_block;
  int64_t resident = int64_t(device.sm_count) * std::max(1, device.max_threads_per_sm / std::max(1, threads));
  int64_t cap = resident * waves;
  return unsigned(std::max<int64_t>(1, std::min(needed, cap)));
}

void launch(const LaunchPlan& plan, const LoadedKernel& kernel, CUstream stream) {
  void* args[] = {const_cast<unsigned char*>(plan.params)};
  // Past 48 KiB in all (the kernel's static shared memory counts too) a block
  // must opt in to its dynamic shared memory.
  if (plan.shared_bytes + unsigned(std::max(0, kernel.resources.shared_bytes)) > 48 * 1024)
    JITOPS_CU(driver().cuFuncSetAttribute(kernel.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          int(plan.shared_bytes)),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  JITOPS_CU(driver().cuLaunchKernel(kernel.function, plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0],
                                    plan.block[1], plan.block[2], plan.shared_bytes, stream, args, nullptr),
            "cuLaunchKernel");
}

}  // namespace jitops
