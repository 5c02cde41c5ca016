#include "runtime/launch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "runtime/driver_api.h"
#include "runtime/kernel_registry.h"

namespace jitops {

unsigned grid_blocks(int64_t work, int64_t per_block, int threads, const DeviceInfo& device, int waves) {
  int64_t needed = (work + per_block - 1) / per_block;
  int64_t resident = int64_t(device.sm_count) * std::max(1, device.max_threads_per_sm / std::max(1, threads));
  int64_t cap = resident * waves;
  return unsigned(std::max<int64_t>(1, std::min(needed, cap)));
}

namespace {
// The host builds a template's parameters from its parsed signature; the
// driver knows what the compiled kernel takes. A difference is a jitops bug
// (or a signature it misread), never something to launch.
void check_param_sizes(const LaunchPlan& plan, const LoadedKernel& kernel) {
  if (plan.param_count == 0 || !kernel.user.param_sizes_known) return;
  const std::vector<size_t>& want = kernel.user.param_sizes;
  bool same = want.size() == size_t(plan.param_count);
  for (int i = 0; same && i < plan.param_count; ++i) same = want[size_t(i)] == plan.param_sizes[i];
  if (same) return;
  std::string got, expected;
  for (int i = 0; i < plan.param_count; ++i) got += (i ? ", " : "") + std::to_string(plan.param_sizes[i]);
  for (size_t i = 0; i < want.size(); ++i) expected += (i ? ", " : "") + std::to_string(want[i]);
  throw std::logic_error("jitops built parameters of " + got + " bytes for a kernel that takes " + expected +
                         " (please report this with the kernel's signature)");
}
}  // namespace

void launch(const LaunchPlan& plan, const LoadedKernel& kernel, CUstream stream) {
  void* one[] = {const_cast<unsigned char*>(plan.params)};
  void* several[LaunchPlan::kMaxKernelParams];
  for (int i = 0; i < plan.param_count; ++i) several[i] = const_cast<unsigned char*>(plan.params + plan.param_offsets[i]);
  void** args = plan.param_count > 0 ? several : one;
  if (plan.spec.family == KernelFamily::User) {
    refresh_user_error_slot(kernel);
    check_param_sizes(plan, kernel);
  }
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
