// NVRTC compilation of one specialized source to CUBIN (for the exact GPU
// architecture) and PTX (kept for inspection, and loaded instead of the CUBIN
// when NVRTC does not know the GPU's architecture).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace jitops {

struct CompileTarget {
  int arch = 90;        // the GPU's compute capability, e.g. 90
  int code_arch = 90;   // what NVRTC compiles for: arch, or the newest it knows below it
  bool cubin = true;    // false: PTX only (the driver JIT-compiles it at load)
};

// The target for a GPU of compute capability `arch` with the loaded NVRTC
// (loads NVRTC to ask which architectures it knows).
CompileTarget compile_target_for(int arch);

// CUBIN for exactly `arch`: what compile_target_for returns whenever NVRTC
// knows the GPU, known without loading NVRTC.
CompileTarget natural_target(int arch);

struct CompiledKernel {
  std::string key_text;     // everything the result depends on
  std::string source;       // the specialized source
  std::string kernel_name;
  std::vector<std::string> options;
  std::string ptx;
  std::string cubin;        // empty when the target is PTX only
  std::vector<std::string> lowered_names;  // of the name expressions, in order (none: kernel_name is the symbol)
  std::string log;          // NVRTC's log, including ptxas' resource report
  double compile_ms = 0.0;
  int code_arch = 0;
};

// NVRTC refused the source; carries what a user needs to see why.
class CompileFailure : public std::runtime_error {
 public:
  CompileFailure(std::string log, std::vector<std::string> options, std::string kernel_name, std::string source);
  std::string log, kernel_name, source;
  std::vector<std::string> options;
};

// The options a spec is compiled with for `target`.
std::vector<std::string> compile_options(const CompileTarget& target);

// The cache key text of a source compiled with options for a target.
std::string cache_key_text(const std::string& source, const std::vector<std::string>& options,
                           const CompileTarget& target);

// Compiles `source` (which includes templates by name); throws CompileFailure.
// Each name expression ("axpy<float, 4>", "my_kernel") is instantiated and
// its lowered (mangled) symbol returned in lowered_names.
CompiledKernel compile_source(const std::string& source, const std::string& kernel_name,
                              const std::vector<std::string>& options, const CompileTarget& target,
                              const std::vector<std::string>& name_expressions = {});

// `options` after `extra`, minus the defaults a user's own option replaces
// (a user's --std=c++20 drops the default --std=c++17).
std::vector<std::string> merge_options(std::vector<std::string> defaults, const std::vector<std::string>& extra);

}  // namespace jitops
