#include "runtime/user_module.h"

#include <deque>
#include <mutex>

#include "runtime/device_context.h"
#include "runtime/driver_api.h"
#include "runtime/index_errors.h"
#include "runtime/kernel_registry.h"
#include "runtime/op_codes.h"

namespace jitops {
namespace {

std::mutex g_names_mutex;
std::deque<std::string> g_names;  // a deque: user_op_name hands out pointers into it

}  // namespace

int user_op_code(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  for (size_t i = 0; i < g_names.size(); ++i)
    if (g_names[i] == name) return kOpUserBase + int(i);
  g_names.push_back(name);
  return kOpUserBase + int(g_names.size() - 1);
}

const char* user_op_name(int op_code) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  const size_t i = size_t(op_code - kOpUserBase);
  return op_code >= kOpUserBase && i < g_names.size() ? g_names[i].c_str() : "a user kernel";
}

UserModuleInfo setup_user_module(CUmodule module, CUfunction function, const std::string& name) {
  const DriverApi& api = driver();
  UserModuleInfo info;
  if (api.cuFuncGetParamInfo) {
    info.param_sizes_known = true;
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      if (api.cuFuncGetParamInfo(function, i, &offset, &size) != CUDA_SUCCESS) break;
      info.param_sizes.push_back(size);
    }
  }
  size_t bytes = 0;
  CUdeviceptr code = 0;
  // Modules that do not include jitops/tensor.cuh have neither symbol.
  if (api.cuModuleGetGlobal(&code, &bytes, module, "jitops_user_op_code") == CUDA_SUCCESS && bytes == sizeof(int)) {
    const int value = user_op_code(name);
    JITOPS_CU(api.cuMemcpyHtoD(code, &value, sizeof(value)), "cuMemcpyHtoD(jitops_user_op_code)");
    if (api.cuModuleGetGlobal(&info.error_slot, &bytes, module, "jitops_user_error_slot") != CUDA_SUCCESS ||
        bytes != sizeof(void*))
      info.error_slot = 0;
  }
  return info;
}

void refresh_user_error_slot(const LoadedKernel& kernel) {
  if (!kernel.user.error_slot) return;
  const int mode = int(index_check_mode());
  if (kernel.user_slot_mode.load(std::memory_order_relaxed) == mode) return;
  IndexErrorSlot* slot =
      index_check_mode() == IndexCheckMode::Off ? nullptr : device_context(kernel.device).error_slot_device();
  JITOPS_CU(driver().cuMemcpyHtoD(kernel.user.error_slot, &slot, sizeof(slot)), "cuMemcpyHtoD(jitops_user_error_slot)");
  kernel.user_slot_mode.store(mode, std::memory_order_relaxed);
}

}  // namespace jitops
