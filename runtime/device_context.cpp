#include "runtime/device_context.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/driver_api.h"
#include "runtime/tuning.h"

namespace jitops {

DeviceInfo device_info_for_arch(int arch) {
  DeviceInfo info;
  info.cc_major = arch / 10;
  info.cc_minor = arch % 10;
  // SM counts of the flagship part of each generation; only grid caps use it.
  info.sm_count = arch >= 100 ? 148 : arch >= 90 ? 132 : arch >= 80 ? 108 : 80;
  info.max_threads_per_sm = (arch == 86 || arch == 89) ? 1536 : 2048;
  const bool big = arch == 80 || arch == 87 || arch >= 90;
  info.shared_per_sm = arch >= 90 ? 233472 : big ? 167936 : arch >= 75 ? 102400 : 65536;
  info.shared_per_block_optin = arch >= 90 ? 232448 : big ? 166912 : arch >= 75 ? 101376 : 49152;
  info.l2_bytes = int64_t(arch >= 100 ? 126 : arch >= 90 ? 50 : arch >= 80 ? 40 : 6) << 20;
  info.name = "sm_" + std::to_string(arch) + " (no device)";
  info.tuning_id = device_tuning_id(info);
  return info;
}

DeviceContext::DeviceContext(int ordinal) {
  const DriverApi& api = driver();
  JITOPS_CU(api.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  info_.ordinal = ordinal;
  auto attr = [&](CUdevice_attribute a, const char* what) {
    int v = 0;
    JITOPS_CU(api.cuDeviceGetAttribute(&v, a, device_), what);
    return v;
  };
  info_.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cuDeviceGetAttribute(CC_MAJOR)");
  info_.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cuDeviceGetAttribute(CC_MINOR)");
  info_.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "cuDeviceGetAttribute(SM_COUNT)");
  info_.max_threads_per_sm =
      attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "cuDeviceGetAttribute(MAX_THREADS_PER_SM)");
  info_.shared_per_sm =
      attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "cuDeviceGetAttribute(SHARED_PER_SM)");
  info_.shared_per_block_optin =
      attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "cuDeviceGetAttribute(SHARED_OPTIN)");
  info_.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "cuDeviceGetAttribute(L2_CACHE_SIZE)");
  char name[256] = {0};
  JITOPS_CU(api.cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
  info_.name = name;
  JITOPS_CU(api.cuDriverGetVersion(&info_.driver_version), "cuDriverGetVersion");
  info_.tuning_id = device_tuning_id(info_);
  JITOPS_CU(api.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  make_current();
  // Per-call scratch (histc, deterministic sums) comes from the default
  // stream-ordered pool; keep its memory instead of returning it at every
  // synchronization, which made each allocation map pages anew (tens of us).
  CUmemoryPool pool = nullptr;
  if (api.cuDeviceGetDefaultMemPool(&pool, device_) == CUDA_SUCCESS && pool) {
    cuuint64_t keep = ~cuuint64_t(0);
    api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
  }
  void* host = nullptr;
  JITOPS_CU(api.cuMemHostAlloc(&host, sizeof(IndexErrorSlot), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
            "cuMemHostAlloc(index error slot)");
  error_host_ = static_cast<IndexErrorSlot*>(host);
  *error_host_ = IndexErrorSlot{};
  error_host_->epoch = 1;
  CUdeviceptr guard = 0;
  JITOPS_CU(api.cuMemAlloc(&guard, sizeof(IndexErrorGuard)), "cuMemAlloc(index error guard)");
  const IndexErrorGuard clean{0, 0, 0};
  JITOPS_CU(api.cuMemcpyHtoD(guard, &clean, sizeof(clean)), "cuMemcpyHtoD(index error guard)");
  error_host_->guard = reinterpret_cast<IndexErrorGuard*>(guard);
  CUdeviceptr dev = 0;
  JITOPS_CU(api.cuMemHostGetDevicePointer(&dev, host, 0), "cuMemHostGetDevicePointer");
  error_device_ = reinterpret_cast<IndexErrorSlot*>(dev);
}

DeviceContext::~DeviceContext() {
  // Contexts live until process exit; the driver may already be torn down
  // then, so nothing is released here on purpose.
}

void DeviceContext::make_current() const {
  const DriverApi& api = driver();
  CUcontext current = nullptr;
  api.cuCtxGetCurrent(&current);
  if (current != context_) JITOPS_CU(api.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

int device_count() {
  int n = 0;
  JITOPS_CU(driver().cuDeviceGetCount(&n), "cuDeviceGetCount");
  return n;
}

DeviceContext& device_context(int ordinal) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<DeviceContext>> contexts;
  static std::atomic<DeviceContext*> fast[16];  // lock-free reads on the per-call path
  if (ordinal >= 0 && ordinal < 16) {
    if (DeviceContext* c = fast[ordinal].load(std::memory_order_acquire)) return *c;
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (ordinal < 0 || ordinal >= device_count())
    throw std::out_of_range("CUDA device " + std::to_string(ordinal) + " does not exist (this machine has " +
                            std::to_string(device_count()) + ")");
  if (contexts.size() <= size_t(ordinal)) contexts.resize(ordinal + 1);
  if (!contexts[ordinal]) contexts[ordinal] = std::make_unique<DeviceContext>(ordinal);
  if (ordinal < 16) fast[ordinal].store(contexts[ordinal].get(), std::memory_order_release);
  return *contexts[ordinal];
}

}  // namespace jitops
