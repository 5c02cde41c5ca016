// The CUDA driver, loaded at run time (dlopen libcuda.so.1) behind one table,
// so that `import jitops` works where there is no driver and the first use
// there says what is missing and where it looked.
#pragma once
#include <cuda.h>

#include <string>

namespace jitops {

#define JITOPS_DRIVER_FUNCTIONS(X) \
  X(cuInit)                        \
  X(cuDriverGetVersion)            \
  X(cuGetErrorName)                \
  X(cuGetErrorString)              \
  X(cuDeviceGet)                   \
  X(cuDeviceGetCount)              \
  X(cuDeviceGetAttribute)          \
  X(cuDeviceGetName)               \
  X(cuDevicePrimaryCtxRetain)      \
  X(cuDevicePrimaryCtxRelease)     \
  X(cuCtxSetCurrent)               \
  X(cuCtxGetCurrent)               \
  X(cuCtxSynchronize)              \
  X(cuStreamSynchronize)           \
  X(cuModuleLoadData)              \
  X(cuModuleUnload)                \
  X(cuModuleGetFunction)           \
  X(cuFuncGetAttribute)            \
  X(cuFuncSetAttribute)            \
  X(cuLaunchKernel)                \
  X(cuMemAlloc)                    \
  X(cuMemFree)                     \
  X(cuMemcpyHtoD)                  \
  X(cuMemcpyDtoH)                  \
  X(cuMemHostAlloc)                \
  X(cuMemFreeHost)                 \
  X(cuMemHostGetDevicePointer)     \
  X(cuMemAllocAsync)               \
  X(cuMemFreeAsync)                \
  X(cuMemsetD32Async)              \
  X(cuMemsetD8Async)               \
  X(cuMemcpyDtoDAsync)             \
  X(cuEventCreate)                 \
  X(cuEventRecord)                 \
  X(cuEventSynchronize)            \
  X(cuEventElapsedTime)            \
  X(cuEventDestroy)                \
  X(cuDeviceGetDefaultMemPool)     \
  X(cuMemPoolSetAttribute)         \
  X(cuPointerGetAttribute)         \
  X(cuModuleGetGlobal)

// Newer than the oldest driver jitops runs on: null where the driver lacks them.
#define JITOPS_OPTIONAL_DRIVER_FUNCTIONS(X) \
  X(cuFuncGetParamInfo)

struct DriverApi {
#define JITOPS_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
  JITOPS_DRIVER_FUNCTIONS(JITOPS_DECLARE_MEMBER)
  JITOPS_OPTIONAL_DRIVER_FUNCTIONS(JITOPS_DECLARE_MEMBER)
#undef JITOPS_DECLARE_MEMBER
};

// The loaded and initialized driver; throws LibraryUnavailable (naming the
// places it looked) or CudaFailure (cuInit failed, e.g. no GPU).
const DriverApi& driver();

// True when libcuda loads and cuInit succeeds (and this is not a child forked
// after CUDA was initialized); never throws.
bool driver_available(std::string* why = nullptr);

// Errors after which the context is unusable for the rest of the process
// (CUDA_ERROR_ASSERT, CUDA_ERROR_ILLEGAL_ADDRESS, ...).
bool is_sticky(int code);

// Throws CudaFailure naming `call` when `result` is not CUDA_SUCCESS.
void check_cuda(CUresult result, const char* call);

}  // namespace jitops

#define JITOPS_CU(call_expr, name) ::jitops::check_cuda((call_expr), name)
