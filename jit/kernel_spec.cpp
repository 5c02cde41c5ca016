#include "jit/kernel_spec.h"

#include <stdexcept>

#include "jit/elementwise_source.h"
#include "jit/gather_source.h"
#include "jit/histogram_source.h"
#include "jit/reduction_source.h"
#include "jit/scatter_source.h"
#include "jit/sort_source.h"
#include "jit/upsample_source.h"
#include "jit/user_source.h"

namespace jitops {

const KernelFamilyInfo& family_info(KernelFamily family) {
  switch (family) {
    case KernelFamily::Gather:
      return gather_family_info();
    case KernelFamily::Scatter:
      return scatter_family_info();
    case KernelFamily::Sort:
      return sort_family_info();
    case KernelFamily::Elementwise:
      return elementwise_family_info();
    case KernelFamily::Upsample:
      return upsample_family_info();
    case KernelFamily::Histogram:
      return histogram_family_info();
    case KernelFamily::User:
      return user_family_info();
    case KernelFamily::Reduction:
      return reduction_family_info();
  }
  throw std::logic_error("unknown kernel family " + std::to_string(int(family)));
}

std::string describe_spec(const KernelSpec& spec) {
  const KernelFamilyInfo& info = family_info(spec.family);
  std::string out = info.name;
  for (int i = 0; i < KernelSpec::kFields; ++i) {
    if (!info.field_names[i]) continue;
    out += std::string(" ") + info.field_names[i] + "=" + std::to_string(spec.fields[i]);
  }
  return out;
}

}  // namespace jitops
