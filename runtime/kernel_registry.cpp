#include "runtime/kernel_registry.h"

#include <chrono>
#include <map>
#include <optional>
#include <mutex>
#include <cctype>
#include <cstdlib>
#include <shared_mutex>
#include <unordered_map>

#include "jit/disk_cache.h"
#include "runtime/device_context.h"
#include "runtime/driver_api.h"

namespace jitops {
namespace {

struct SpecDevice {
  KernelSpec spec;
  int device;
  bool operator==(const SpecDevice& o) const { return device == o.device && spec == o.spec; }
};
struct SpecDeviceHash {
  size_t operator()(const SpecDevice& k) const { return KernelSpecHash()(k.spec) * 31 + size_t(k.device); }
};

// Entries are never erased except by clear_memory_cache(), so pointers handed
// out stay valid for the callers' launches.
struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<SpecDevice, std::unique_ptr<LoadedKernel>, SpecDeviceHash> loaded;
  std::mutex prepare_mutex;  // serializes slow paths: one compile per spec
  std::unordered_map<SpecDevice, PreparedKernel, SpecDeviceHash> prepared;  // device field holds the arch
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked: modules must outlive static destructors' launches
  return *r;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

const char* origin_name(KernelOrigin origin) {
  switch (origin) {
    case KernelOrigin::Compiled: return "compiled";
    case KernelOrigin::Disk: return "disk";
    case KernelOrigin::Memory: return "memory";
  }
  return "?";
}

RegistryCounters& registry_counters() {
  static RegistryCounters counters;
  return counters;
}

std::string specialized_source(const KernelSpec& spec, const CompileTarget& target) {
  std::string header = "// jitops kernel: " + describe_spec(spec) + "\n// options:";
  for (const std::string& o : compile_options(target)) header += " " + o;
  return header + "\n" + family_info(spec.family).source_body(spec);
}

PreparedKernel prepare_kernel(const KernelSpec& spec, int arch) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.prepare_mutex);
  SpecDevice key{spec, arch};
  auto it = r.prepared.find(key);
  if (it != r.prepared.end()) {
    PreparedKernel p = it->second;
    registry_counters().memory_hits++;
    p.origin = KernelOrigin::Memory;
    return p;
  }
  auto start = std::chrono::steady_clock::now();
  // First the key NVRTC would use for a GPU it knows, with NVRTC not loaded:
  // a disk hit then costs a file read. Only a miss loads NVRTC and asks.
  CompileTarget target = natural_target(arch);
  std::string source = specialized_source(spec, target);
  std::vector<std::string> options = compile_options(target);
  std::string key_text = cache_key_text(source, options, target);
  bool from_disk = false;
  std::optional<CompiledKernel> hit = read_cached(key_text, arch);
  CompiledKernel k;
  if (hit) {
    from_disk = true;
    disk_cache_counters().hits++;
    k = std::move(*hit);
  } else {
    CompileTarget real = compile_target_for(arch);
    if (real.cubin != target.cubin || real.code_arch != target.code_arch) {
      target = real;
      source = specialized_source(spec, target);
      options = compile_options(target);
      key_text = cache_key_text(source, options, target);
    }
    k = load_or_compile(
        key_text, arch, [&] { return compile_source(source, "jitops_kernel", options, target); }, &from_disk);
  }
  PreparedKernel p;
  p.spec = spec;
  p.compiled = std::make_shared<const CompiledKernel>(std::move(k));
  p.origin = from_disk ? KernelOrigin::Disk : KernelOrigin::Compiled;
  p.prepare_ms = ms_since(start);
  (from_disk ? registry_counters().disk_hits : registry_counters().compiles)++;
  r.prepared.emplace(key, p);
  return p;
}

const LoadedKernel* find_loaded(const KernelSpec& spec, int device) {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  auto it = r.loaded.find(SpecDevice{spec, device});
  if (it == r.loaded.end()) return nullptr;
  registry_counters().memory_hits.fetch_add(1, std::memory_order_relaxed);
  return it->second.get();
}

const LoadedKernel* load_kernel(const KernelSpec& spec, int device) {
  if (const LoadedKernel* k = find_loaded(spec, device)) return k;
  DeviceContext& ctx = device_context(device);
  PreparedKernel prepared = prepare_kernel(spec, ctx.info().arch());
  Registry& r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mutex);
  auto it = r.loaded.find(SpecDevice{spec, device});
  if (it != r.loaded.end()) return it->second.get();
  const DriverApi& api = driver();
  ctx.make_current();
  auto loaded = std::make_unique<LoadedKernel>();
  loaded->prepared = prepared;
  loaded->device = device;
  auto start = std::chrono::steady_clock::now();
  const std::string& image = prepared.compiled->cubin.empty() ? prepared.compiled->ptx : prepared.compiled->cubin;
  JITOPS_CU(api.cuModuleLoadData(&loaded->module, image.c_str()), "cuModuleLoadData");
  JITOPS_CU(api.cuModuleGetFunction(&loaded->function, loaded->module, prepared.compiled->kernel_name.c_str()),
            "cuModuleGetFunction");
  loaded->load_ms = ms_since(start);
  auto attr = [&](CUfunction_attribute a) {
    int v = -1;
    api.cuFuncGetAttribute(&v, a, loaded->function);
    return v;
  };
  loaded->resources.registers = attr(CU_FUNC_ATTRIBUTE_NUM_REGS);
  loaded->resources.shared_bytes = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  loaded->resources.local_bytes = attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  loaded->resources.max_threads = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  registry_counters().loads++;
  const LoadedKernel* out = loaded.get();
  r.loaded.emplace(SpecDevice{spec, device}, std::move(loaded));
  return out;
}

void clear_memory_cache() {
  Registry& r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mutex);
  std::lock_guard<std::mutex> prepare_lock(r.prepare_mutex);
  std::string why;
  if (driver_available(&why)) {
    for (auto& entry : r.loaded) {
      device_context(entry.second->device).make_current();
      driver().cuModuleUnload(entry.second->module);
    }
  }
  r.loaded.clear();
  r.prepared.clear();
}

namespace {
// The integer just before `suffix` in the first line of `log` containing it,
// e.g. "Used 40 registers" -> 40 for suffix " registers"; -1 if absent.
int number_before(const std::string& log, const std::string& suffix) {
  size_t at = log.find(suffix);
  if (at == std::string::npos) return -1;
  size_t start = at;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(log[start - 1]))) --start;
  return start == at ? -1 : std::atoi(log.c_str() + start);
}
}  // namespace

KernelResources resources_from_log(const std::string& log) {
  // ptxas -v: "Used 40 registers, used 0 barriers, 16 bytes smem" and
  // "0 bytes stack frame"; shared memory appears only when used.
  KernelResources res;
  res.registers = number_before(log, " registers");
  if (res.registers >= 0) {
    int smem = number_before(log, " bytes smem");
    int stack = number_before(log, " bytes stack frame");
    res.shared_bytes = smem < 0 ? 0 : smem;
    res.local_bytes = stack < 0 ? 0 : stack;
  }
  return res;
}

}  // namespace jitops
