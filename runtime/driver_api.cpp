#include "runtime/driver_api.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <mutex>

#include "runtime/cuda_error.h"

namespace jitops {
namespace {

#define JITOPS_STR2(x) #x
#define JITOPS_STR(x) JITOPS_STR2(x)

// Set in a child made by fork() after this process initialized CUDA: the
// child inherits jitops' contexts and modules but the driver's state there is
// unusable (calls fail or hang), so every CUDA use raises instead.
std::atomic<bool> g_forked{false};
constexpr const char* kForkedMessage =
    "this process was made by fork() after its parent had initialized CUDA, and CUDA cannot be used in such a "
    "child; use the 'spawn' start method (multiprocessing.get_context('spawn'), or torch.multiprocessing with "
    "start_method='spawn'), as PyTorch requires";

void after_fork_in_child() { g_forked.store(true); }

struct LoadedDriver {
  DriverApi api;
  std::string error;  // empty when usable
  int init_code = 0;
};

LoadedDriver load_driver() {
  LoadedDriver loaded;
  const char* candidates[] = {"libcuda.so.1", "libcuda.so"};
  void* handle = nullptr;
  std::string tried;
  for (const char* name : candidates) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    const char* err = dlerror();
    tried += std::string("\n  ") + name + ": " + (err ? err : "not found");
  }
  if (!handle) {
    loaded.error =
        "jitops could not load the CUDA driver (libcuda.so.1); it looked on the dynamic loader's path "
        "(LD_LIBRARY_PATH, ldconfig):" + tried +
        "\nKernels can still be compiled and inspected (jitops.explain(..., arch='sm_90')), but not run.";
    return loaded;
  }
  // Each member is named after the versioned symbol cuda.h maps it to
  // (cuMemAlloc -> cuMemAlloc_v2), so JITOPS_STR(name) is the right symbol.
#define JITOPS_LOAD_MEMBER(name)                                                       \
  loaded.api.name = reinterpret_cast<decltype(loaded.api.name)>(dlsym(handle, JITOPS_STR(name))); \
  if (!loaded.api.name) {                                                              \
    loaded.error = std::string("the CUDA driver lacks ") + JITOPS_STR(name) +          \
                   " (driver too old for jitops?)";                                     \
    return loaded;                                                                     \
  }
  JITOPS_DRIVER_FUNCTIONS(JITOPS_LOAD_MEMBER)
#undef JITOPS_LOAD_MEMBER
#define JITOPS_LOAD_OPTIONAL(name) \
  loaded.api.name = reinterpret_cast<decltype(loaded.api.name)>(dlsym(handle, JITOPS_STR(name)));
  JITOPS_OPTIONAL_DRIVER_FUNCTIONS(JITOPS_LOAD_OPTIONAL)
#undef JITOPS_LOAD_OPTIONAL
  CUresult r = loaded.api.cuInit(0);
  if (r == CUDA_SUCCESS) pthread_atfork(nullptr, nullptr, &after_fork_in_child);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    loaded.api.cuGetErrorName(r, &name);
    loaded.init_code = int(r);
    loaded.error = std::string("cuInit failed: ") + (name ? name : "unknown error") +
                   " (is there a CUDA GPU on this machine?)";
  }
  return loaded;
}

const LoadedDriver& loaded_driver() {
  static const LoadedDriver loaded = load_driver();
  return loaded;
}

}  // namespace

const DriverApi& driver() {
  if (g_forked.load(std::memory_order_relaxed))
    throw CudaFailure("fork", int(CUDA_ERROR_NOT_INITIALIZED), "CUDA_ERROR_NOT_INITIALIZED", kForkedMessage);
  const LoadedDriver& d = loaded_driver();
  if (!d.error.empty()) {
    if (d.init_code != 0) throw CudaFailure("cuInit", d.init_code, "cuInit", d.error);
    throw LibraryUnavailable(d.error);
  }
  return d.api;
}

bool driver_available(std::string* why) {
  if (g_forked.load(std::memory_order_relaxed)) {
    if (why) *why = kForkedMessage;
    return false;
  }
  const LoadedDriver& d = loaded_driver();
  if (why) *why = d.error;
  return d.error.empty();
}

bool is_sticky(int code) {
  switch (code) {
    case CUDA_ERROR_ILLEGAL_ADDRESS: case CUDA_ERROR_ASSERT: case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION: case CUDA_ERROR_MISALIGNED_ADDRESS: case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC: case CUDA_ERROR_LAUNCH_FAILED: case CUDA_ERROR_ECC_UNCORRECTABLE:
      return true;
    default:
      return false;
  }
}

void check_allocation(int result, size_t bytes, int device, const char* what, const char* call) {
  if (result == CUDA_ERROR_OUT_OF_MEMORY) throw OutOfDeviceMemory(bytes, device, what);
  check_cuda(CUresult(result), call);
}

void check_cuda(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const DriverApi& api = loaded_driver().api;
  const char* name = nullptr;
  const char* message = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(result, &message);
  std::string text = message ? message : "";
  if (is_sticky(int(result)))
    text += ". The CUDA context is unusable: an earlier kernel in this process failed (a device-side assert or a "
            "bad memory access, perhaps in another library), and every later CUDA call here fails the same way; "
            "restart the process (CUDA_LAUNCH_BLOCKING=1 finds the failing kernel)";
  throw CudaFailure(call, int(result), name ? name : "CUDA_ERROR_UNKNOWN", text);
}

}  // namespace jitops
