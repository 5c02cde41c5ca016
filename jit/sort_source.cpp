#include "jit/sort_source.h"

#include <string>

namespace jitops {
namespace {

const char* const kFieldNames[KernelSpec::kFields] = {"threads", nullptr, nullptr, nullptr, nullptr, nullptr,
                                                      nullptr,   nullptr, nullptr, nullptr, nullptr, nullptr};

std::string sort_body(const KernelSpec& s) {
  return "#include \"sort.cuh\"\n\n"
         "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(s.fields[SortSpecFields::kMaxThreads]) +
         ")\njitops_kernel(const jitops::SortParams p) {\n  jitops::bitonic_step(p);\n}\n";
}

}  // namespace

const KernelFamilyInfo& sort_family_info() {
  static const KernelFamilyInfo info{"sort", kFieldNames, &sort_body};
  return info;
}

}  // namespace jitops
