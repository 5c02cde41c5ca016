#include "runtime/driver_api.h"

#include <dlfcn.h>

#include <mutex>

#include "runtime/cuda_error.h"

namespace jitops {
namespace {

#define JITOPS_STR2(x) #x
#define JITOPS_STR(x) JITOPS_STR2(x)

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
  CUresult r = loaded.api.cuInit(0);
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
  const LoadedDriver& d = loaded_driver();
  if (!d.error.empty()) {
    if (d.init_code != 0) throw CudaFailure("cuInit", d.init_code, "cuInit", d.error);
    throw LibraryUnavailable(d.error);
  }
  return d.api;
}

bool driver_available(std::string* why) {
  const LoadedDriver& d = loaded_driver();
  if (why) *why = d.error;
  return d.error.empty();
}

void check_cuda(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const DriverApi& api = loaded_driver().api;
  const char* name = nullptr;
  const char* message = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(result, &message);
  throw CudaFailure(call, int(result), name ? name : "CUDA_ERROR_UNKNOWN", message ? message : "");
}

}  // namespace jitops
