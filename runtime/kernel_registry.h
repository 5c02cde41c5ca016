// Kernels in memory: one compiled kernel per (spec, architecture), one loaded
// module per (spec, device). Lookups on the per-call path take a shared lock;
// a miss compiles (or reads the disk cache) once, while other callers of the
// same spec wait for it. Loaded modules are capped (memory_cache_limit): the
// least recently used one is unloaded when the cap is passed; callers hold a
// shared_ptr, so a module is unloaded only once no launch is using it.
#pragma once
#include <cuda.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "jit/compiler.h"
#include "jit/kernel_spec.h"
#include "runtime/user_module.h"

namespace jitops {

enum class KernelOrigin { Compiled, Disk, Memory };
const char* origin_name(KernelOrigin origin);

struct KernelResources {
  int registers = -1;
  int shared_bytes = -1;
  int local_bytes = -1;
  int max_threads = -1;
};

struct PreparedKernel {
  KernelSpec spec;
  std::shared_ptr<const CompiledKernel> compiled;
  KernelOrigin origin = KernelOrigin::Compiled;  // how it first reached this process
  double prepare_ms = 0.0;                        // compile or disk-read time of that first time
};

struct LoadedKernel {
  PreparedKernel prepared;
  int device = -1;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  KernelResources resources;
  double load_ms = 0.0;  // cuModuleLoadData
  mutable std::atomic<uint64_t> last_use{0};
  UserModuleInfo user;                        // users' kernels only
  mutable std::atomic<int> user_slot_mode{-1};  // the index-check mode user.error_slot was last written for

  LoadedKernel() = default;
  LoadedKernel(const LoadedKernel&) = delete;
  ~LoadedKernel();  // unloads the module
};
using LoadedKernelRef = std::shared_ptr<const LoadedKernel>;

struct RegistryCounters {
  std::atomic<long> compiles{0};
  std::atomic<long> disk_hits{0};
  std::atomic<long> memory_hits{0};
  std::atomic<long> loads{0};
  std::atomic<long> unloads{0};
};
RegistryCounters& registry_counters();

// The specialized source of `spec` for `target`, beginning with a comment that
// names the spec and the compile options.
std::string specialized_source(const KernelSpec& spec, const CompileTarget& target);

// Compiled kernel for `spec` on architecture `arch` (no GPU needed). Each
// key is compiled once per process; different keys compile at once, and no
// lock a cached call needs is held during a compile.
PreparedKernel prepare_kernel(const KernelSpec& spec, int arch);

// The most compiles that ran at the same time since the process started.
int most_concurrent_compiles();

// Fast path: the loaded kernel, or null when it must be prepared first.
LoadedKernelRef find_loaded(const KernelSpec& spec, int device);

// The symbol of the function `spec` launches in its compiled module.
const std::string& function_symbol(const KernelSpec& spec, const CompiledKernel& compiled);

// Slow path: compile or read from disk, then load on `device`. Never returns null.
LoadedKernelRef load_kernel(const KernelSpec& spec, int device);

// The most modules kept loaded (all devices together); JITOPS_MEMORY_CACHE_MAX_KERNELS
// sets it at start (default 4096). Lowering it unloads the least recently used.
void set_memory_cache_limit(size_t kernels);
size_t memory_cache_limit();
size_t loaded_kernel_count();

// Unloads every module and forgets every compiled kernel (tests use it to
// force disk hits; the package calls it at exit).
void clear_memory_cache();

// ptxas' resource report parsed from an NVRTC log (works with no GPU).
KernelResources resources_from_log(const std::string& log);

}  // namespace jitops
