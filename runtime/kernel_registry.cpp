#include "runtime/kernel_registry.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <stdexcept>
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

size_t initial_limit() {
  const char* env = std::getenv("JITOPS_MEMORY_CACHE_MAX_KERNELS");
  long v = env ? std::atol(env) : 0;
  return v > 0 ? size_t(v) : 4096;
}

// A compile (or disk read) under way; callers of the same key wait for it.
struct InFlight {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  PreparedKernel result;
  std::exception_ptr error;
};

// Callers hold shared_ptrs: an entry erased (evicted, cleared) while a launch
// uses it is unloaded when that launch lets go.
struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<SpecDevice, std::shared_ptr<const LoadedKernel>, SpecDeviceHash> loaded;
  // Advances at each load (the only time anything is evicted). A lookup
  // stamps its kernel with the current value: kernels used since the last
  // load rank above the rest, which is all least-recently-used eviction needs,
  // and the per-call path does no read-modify-write on a shared counter.
  std::atomic<uint64_t> tick{0};
  size_t limit = initial_limit();
  // Compiled kernels by (spec, arch), and the compiles under way: a key is
  // compiled once while other keys compile at the same time; the mutex
  // guards the maps only, never a compile.
  std::mutex prepare_mutex;
  std::unordered_map<SpecDevice, PreparedKernel, SpecDeviceHash> prepared;  // device field holds the arch
  std::unordered_map<SpecDevice, std::shared_ptr<InFlight>, SpecDeviceHash> in_flight;
  std::atomic<int> compiling{0}, most_compiling{0};  // compiles at once, now and at most (tests read it)
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
  const KernelFamilyInfo& family = family_info(spec.family);
  const CompileRequest request = family.compile_request ? family.compile_request(spec) : CompileRequest{};
  std::string header = "// jitops kernel: " + describe_spec(spec) + "\n// options:";
  for (const std::string& o : merge_options(compile_options(target), request.extra_options)) header += " " + o;
  if (!request.name_expressions.empty()) {
    header += "\n// functions:";
    for (const std::string& e : request.name_expressions) header += " " + e + ";";
  }
  return header + "\n" + family.source_body(spec);
}

namespace {

// Compiles `spec` for `arch`, or reads it from the disk cache: no registry lock held.
PreparedKernel compile_or_read(const KernelSpec& spec, int arch) {
  auto start = std::chrono::steady_clock::now();
  // First the key NVRTC would use for a GPU it knows, with NVRTC not loaded:
  // a disk hit then costs a file read. Only a miss loads NVRTC and asks.
  const KernelFamilyInfo& family = family_info(spec.family);
  const CompileRequest request = family.compile_request ? family.compile_request(spec) : CompileRequest{};
  CompileTarget target = natural_target(arch);
  std::string source = specialized_source(spec, target);
  std::vector<std::string> options = merge_options(compile_options(target), request.extra_options);
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
      options = merge_options(compile_options(target), request.extra_options);
      key_text = cache_key_text(source, options, target);
    }
    k = load_or_compile(
        key_text, arch,
        [&] { return compile_source(source, request.program_name, options, target, request.name_expressions); },
        &from_disk);
  }
  PreparedKernel p;
  p.spec = spec;
  p.compiled = std::make_shared<const CompiledKernel>(std::move(k));
  p.origin = from_disk ? KernelOrigin::Disk : KernelOrigin::Compiled;
  p.prepare_ms = ms_since(start);
  (from_disk ? registry_counters().disk_hits : registry_counters().compiles)++;
  return p;
}

}  // namespace

int most_concurrent_compiles() { return registry().most_compiling.load(); }

PreparedKernel prepare_kernel(const KernelSpec& spec, int arch) {
  Registry& r = registry();
  const SpecDevice key{spec, arch};
  std::shared_ptr<InFlight> flight;
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(r.prepare_mutex);
    auto it = r.prepared.find(key);
    if (it != r.prepared.end()) {
      PreparedKernel p = it->second;
      registry_counters().memory_hits++;
      p.origin = KernelOrigin::Memory;
      return p;
    }
    auto f = r.in_flight.find(key);
    if (f != r.in_flight.end()) {
      flight = f->second;
    } else {
      flight = std::make_shared<InFlight>();
      r.in_flight.emplace(key, flight);
      mine = true;
    }
  }
  if (!mine) {  // another thread compiles this key: wait for it
    std::unique_lock<std::mutex> lock(flight->mutex);
    flight->done_cv.wait(lock, [&] { return flight->done; });
    if (flight->error) std::rethrow_exception(flight->error);
    registry_counters().memory_hits++;
    PreparedKernel p = flight->result;
    p.origin = KernelOrigin::Memory;
    return p;
  }
  PreparedKernel p;
  std::exception_ptr error;
  const int now = ++r.compiling;
  for (int most = r.most_compiling.load(); now > most && !r.most_compiling.compare_exchange_weak(most, now);) {
  }
  try {
    p = compile_or_read(spec, arch);
  } catch (...) {
    error = std::current_exception();
  }
  --r.compiling;
  {
    std::lock_guard<std::mutex> lock(r.prepare_mutex);
    if (!error) r.prepared.emplace(key, p);
    r.in_flight.erase(key);  // a failed compile is tried again by the next caller
  }
  {
    std::lock_guard<std::mutex> lock(flight->mutex);
    flight->done = true;
    flight->result = p;
    flight->error = error;
  }
  flight->done_cv.notify_all();
  if (error) std::rethrow_exception(error);
  return p;
}

LoadedKernel::~LoadedKernel() {
  if (!module) return;
  std::string why;
  if (!driver_available(&why)) return;
  try {
    device_context(device).make_current();
    driver().cuModuleUnload(module);  // an error here (a dead context) leaves nothing to free
    registry_counters().unloads++;
  } catch (...) {
    // Destructors must not throw: a context made unusable by an earlier error has nothing left to free.
  }
}

LoadedKernelRef find_loaded(const KernelSpec& spec, int device) {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  auto it = r.loaded.find(SpecDevice{spec, device});
  if (it == r.loaded.end()) return nullptr;
  registry_counters().memory_hits.fetch_add(1, std::memory_order_relaxed);
  const uint64_t now = r.tick.load(std::memory_order_relaxed);
  if (it->second->last_use.load(std::memory_order_relaxed) != now)  // no write (no line bouncing) when current
    it->second->last_use.store(now, std::memory_order_relaxed);
  return it->second;
}

namespace {
// Drops least recently used entries until at most `keep` remain (lock held);
// returns them so that unloading happens after the lock is released.
std::vector<LoadedKernelRef> evict_to(Registry& r, size_t keep) {
  std::vector<LoadedKernelRef> evicted;
  while (r.loaded.size() > keep) {
    auto oldest = r.loaded.begin();
    for (auto it = r.loaded.begin(); it != r.loaded.end(); ++it)
      if (it->second->last_use.load(std::memory_order_relaxed) < oldest->second->last_use.load(std::memory_order_relaxed))
        oldest = it;
    evicted.push_back(std::move(oldest->second));
    r.loaded.erase(oldest);
  }
  return evicted;
}
}  // namespace

void set_memory_cache_limit(size_t kernels) {
  Registry& r = registry();
  std::vector<LoadedKernelRef> evicted;
  {
    std::unique_lock<std::shared_mutex> lock(r.mutex);
    r.limit = kernels > 0 ? kernels : 1;
    evicted = evict_to(r, r.limit);
  }
}

size_t memory_cache_limit() {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  return r.limit;
}

size_t loaded_kernel_count() {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  return r.loaded.size();
}

const std::string& function_symbol(const KernelSpec& spec, const CompiledKernel& compiled) {
  if (compiled.lowered_names.empty()) return compiled.kernel_name;
  const KernelFamilyInfo& family = family_info(spec.family);
  const size_t index = family.function_index ? size_t(family.function_index(spec)) : 0;
  if (index >= compiled.lowered_names.size())
    throw std::logic_error("function " + std::to_string(index) + " of a program with " +
                           std::to_string(compiled.lowered_names.size()) + " name expressions");
  return compiled.lowered_names[index];
}

LoadedKernelRef load_kernel(const KernelSpec& spec, int device) {
  if (LoadedKernelRef k = find_loaded(spec, device)) return k;
  DeviceContext& ctx = device_context(device);
  PreparedKernel prepared = prepare_kernel(spec, ctx.info().arch());
  Registry& r = registry();
  std::vector<LoadedKernelRef> evicted;  // unloaded after the lock is released
  std::unique_lock<std::shared_mutex> lock(r.mutex);
  auto it = r.loaded.find(SpecDevice{spec, device});
  if (it != r.loaded.end()) return it->second;
  const DriverApi& api = driver();
  ctx.make_current();
  auto loaded = std::make_shared<LoadedKernel>();
  loaded->prepared = prepared;
  loaded->device = device;
  auto start = std::chrono::steady_clock::now();
  const std::string& image = prepared.compiled->cubin.empty() ? prepared.compiled->ptx : prepared.compiled->cubin;
  JITOPS_CU(api.cuModuleLoadData(&loaded->module, image.c_str()), "cuModuleLoadData");
  JITOPS_CU(api.cuModuleGetFunction(&loaded->function, loaded->module, function_symbol(spec, *prepared.compiled).c_str()),
            "cuModuleGetFunction");
  if (spec.family == KernelFamily::User)
    loaded->user = setup_user_module(loaded->module, loaded->function, prepared.compiled->kernel_name);
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
  loaded->last_use.store(r.tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  LoadedKernelRef out = loaded;
  evicted = evict_to(r, r.limit - 1);
  r.loaded.emplace(SpecDevice{spec, device}, std::move(loaded));
  lock.unlock();
  return out;
}

void clear_memory_cache() {
  Registry& r = registry();
  decltype(r.loaded) dropped;  // unloaded (by ~LoadedKernel) once no launch holds them
  {
    std::unique_lock<std::shared_mutex> lock(r.mutex);
    std::lock_guard<std::mutex> prepare_lock(r.prepare_mutex);
    dropped.swap(r.loaded);
    r.prepared.clear();
  }
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
