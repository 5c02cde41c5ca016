#include "jit/compiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "jit/hash.h"
#include "jit/nvrtc_library.h"
#include "jit/templates.h"

namespace jitops {
namespace {

// Bump when the cache file layout or the meaning of a key changes.
constexpr int kCacheFormatVersion = 1;

std::string numbered(const std::string& source) {
  std::string out;
  int line = 1;
  size_t start = 0;
  while (start <= source.size()) {
    size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    char prefix[16];
    std::snprintf(prefix, sizeof(prefix), "%4d | ", line++);
    out += prefix + source.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

CompileFailure::CompileFailure(std::string log_, std::vector<std::string> options_, std::string kernel_name_,
                               std::string source_)
    : std::runtime_error("NVRTC could not compile " + kernel_name_ + ":\n" + log_ + "\nspecialized source:\n" +
                         numbered(source_)),
      log(std::move(log_)), kernel_name(std::move(kernel_name_)), source(std::move(source_)),
      options(std::move(options_)) {}

CompileTarget natural_target(int arch) {
  CompileTarget t;
  t.arch = arch;
  t.code_arch = arch;
  t.cubin = true;
  return t;
}

CompileTarget compile_target_for(int arch) {
  const NvrtcApi& api = nvrtc();
  CompileTarget t;
  t.arch = arch;
  const auto& archs = api.supported_archs;
  if (archs.empty() || std::find(archs.begin(), archs.end(), arch) != archs.end()) {
    t.code_arch = arch;
    t.cubin = true;
    return t;
  }
  // NVRTC does not know this GPU: PTX for the newest architecture it knows
  // below it, which the driver compiles forward at load time.
  int best = 0;
  for (int a : archs)
    if (a <= arch && a > best) best = a;
  if (best == 0) best = archs.front();
  t.code_arch = best;
  t.cubin = false;
  return t;
}

std::vector<std::string> compile_options(const CompileTarget& target) {
  std::vector<std::string> opts = {
      "--std=c++17",
      (target.cubin ? "-arch=sm_" : "-arch=compute_") + std::to_string(target.code_arch),
      "-DNDEBUG",
  };
  // ptxas' resource report (registers, spills) lands in the log; explain()
  // reads it there when no GPU can be asked.
  if (target.cubin) opts.push_back("--ptxas-options=-v");
  const std::string& inc = nvrtc_location().include_dir;
  if (!inc.empty()) opts.push_back("-I" + inc);
  return opts;
}

std::string cache_key_text(const std::string& source, const std::vector<std::string>& options,
                           const CompileTarget& target) {
  std::string key = "jitops-cache-format " + std::to_string(kCacheFormatVersion) + "\n";
  const NvrtcLocation& where = nvrtc_location();
  if (!where.identity.empty()) {
    key += "nvrtc " + where.identity + "\n";
  } else {  // found only on the loader's path: ask the library itself
    const NvrtcApi& api = nvrtc();
    key += "nvrtc " + api.path + " " + std::to_string(api.major) + "." + std::to_string(api.minor) + "\n";
  }
  key += "arch " + std::to_string(target.arch) + " code " + std::to_string(target.code_arch) +
         (target.cubin ? " cubin" : " ptx") + "\n";
  key += "templates " + hex64(templates_hash()) + "\n";
  for (const std::string& o : options) key += "option " + o + "\n";
  key += "source\n" + source;
  return key;
}

std::vector<std::string> merge_options(std::vector<std::string> defaults, const std::vector<std::string>& extra) {
  auto is_std = [](const std::string& o) { return o.rfind("--std=", 0) == 0 || o.rfind("-std=", 0) == 0; };
  const bool user_std = std::any_of(extra.begin(), extra.end(), is_std);
  std::vector<std::string> out;
  for (std::string& o : defaults)
    if (!(user_std && is_std(o))) out.push_back(std::move(o));
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

CompiledKernel compile_source(const std::string& source, const std::string& kernel_name,
                              const std::vector<std::string>& options, const CompileTarget& target,
                              const std::vector<std::string>& name_expressions) {
  const NvrtcApi& api = nvrtc();
  auto start = std::chrono::steady_clock::now();
  std::vector<const char*> header_sources, header_names;
  for (const TemplateFile& f : template_files()) {
    header_sources.push_back(f.content);
    header_names.push_back(f.name);
  }
  nvrtcProgram prog = nullptr;
  nvrtcResult r = api.nvrtcCreateProgram(&prog, source.c_str(), (kernel_name + ".cu").c_str(),
                                         int(header_sources.size()), header_sources.data(), header_names.data());
  if (r != NVRTC_SUCCESS)
    throw CompileFailure(std::string("nvrtcCreateProgram: ") + api.nvrtcGetErrorString(r), options, kernel_name,
                         source);
  std::unique_ptr<_nvrtcProgram, void (*)(_nvrtcProgram*)> guard(prog, [](_nvrtcProgram* p) {
    nvrtc().nvrtcDestroyProgram(&p);
  });
  for (const std::string& e : name_expressions) {
    r = api.nvrtcAddNameExpression(prog, e.c_str());
    if (r != NVRTC_SUCCESS)
      throw CompileFailure(std::string("nvrtcAddNameExpression(") + e + "): " + api.nvrtcGetErrorString(r), options,
                           kernel_name, source);
  }
  std::vector<const char*> opts;
  for (const std::string& o : options) opts.push_back(o.c_str());
  nvrtcResult compiled = api.nvrtcCompileProgram(prog, int(opts.size()), opts.data());
  size_t log_size = 0;
  api.nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) api.nvrtcGetProgramLog(prog, &log[0]);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (compiled != NVRTC_SUCCESS) throw CompileFailure(log, options, kernel_name, source);

  CompiledKernel out;
  out.source = source;
  out.kernel_name = kernel_name;
  out.options = options;
  out.log = log;
  out.code_arch = target.code_arch;
  for (const std::string& e : name_expressions) {
    const char* lowered = nullptr;
    r = api.nvrtcGetLoweredName(prog, e.c_str(), &lowered);
    if (r != NVRTC_SUCCESS || !lowered)
      throw CompileFailure("no __global__ function matches the name expression '" + e + "' (" +
                               api.nvrtcGetErrorString(r) + ")" + (log.empty() ? "" : "\n" + log),
                           options, kernel_name, source);
    out.lowered_names.push_back(lowered);
  }
  size_t ptx_size = 0;
  api.nvrtcGetPTXSize(prog, &ptx_size);
  out.ptx.assign(ptx_size, '\0');
  api.nvrtcGetPTX(prog, &out.ptx[0]);
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  if (target.cubin) {
    size_t cubin_size = 0;
    api.nvrtcGetCUBINSize(prog, &cubin_size);
    out.cubin.assign(cubin_size, '\0');
    if (cubin_size > 0) api.nvrtcGetCUBIN(prog, &out.cubin[0]);
  }
  out.key_text = cache_key_text(source, options, target);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace jitops
