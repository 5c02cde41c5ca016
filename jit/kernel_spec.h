// A kernel specialization: which template, and the values that template is
// specialized on. Small and hashable, because the per-call path looks kernels
// up by it; the long text key is built only on a miss.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace jitops {

enum class KernelFamily : uint8_t {
  Gather = 1,
  Scatter = 2,
  Sort = 3,
  Elementwise = 4,
  Upsample = 5,
  Histogram = 6,
  User = 7,       // users' own kernels: RawKernel, RawModule, Template (jit/user_source.h)
  Reduction = 8,  // jitops.ReductionKernel (jit/reduction_source.h)
};

struct KernelSpec {
  static constexpr int kFields = 16;
  KernelFamily family = KernelFamily::Gather;
  std::array<int32_t, kFields> fields{};  // meaning defined by the family

  bool operator==(const KernelSpec& o) const { return family == o.family && fields == o.fields; }
};

struct KernelSpecHash {
  size_t operator()(const KernelSpec& s) const {
    uint64_t h = 1469598103934665603ull ^ uint64_t(s.family);
    for (int32_t f : s.fields) h = (h ^ uint32_t(f)) * 1099511628211ull;
    return size_t(h);
  }
};

// What NVRTC is asked for beyond the source: the built-in families compile
// one kernel called "jitops_kernel" with the default options; users' kernels
// name their functions (name expressions, lowered by NVRTC) and add options.
struct CompileRequest {
  std::string program_name = "jitops_kernel";  // error messages and NVRTC's file name
  std::vector<std::string> name_expressions;   // empty: the kernel is program_name itself
  std::vector<std::string> extra_options;      // after the defaults
};

// How a family turns a spec into source: implemented next to each planner.
struct KernelFamilyInfo {
  const char* name;
  const char* const* field_names;  // kFields entries, nullptr for unused (and left out of the source)
  // The body of the specialized source (after the header comment).
  std::string (*source_body)(const KernelSpec&);
  // Optional: the request for a spec (default: CompileRequest{}), and which
  // of its name expressions the spec launches (default: the first).
  CompileRequest (*compile_request)(const KernelSpec&) = nullptr;
  int (*function_index)(const KernelSpec&) = nullptr;
};

const KernelFamilyInfo& family_info(KernelFamily family);

// "gather unit=16 index=8 dims=2 ...": the spec as a human reads it.
std::string describe_spec(const KernelSpec& spec);

}  // namespace jitops
