// A kernel specialization: which template, and the values that template is
// specialized on. Small and hashable, because the per-call path looks kernels
// up by it; the long text key is built only on a miss.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace jitops {

enum class KernelFamily : uint8_t {
  Gather = 1,
  Scatter = 2,
  Sort = 3,
  Elementwise = 4,
  Upsample = 5,
  Histogram = 6,
};

struct KernelSpec {
  static constexpr int kFields = 15;
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

// How a family turns a spec into source: implemented next to each planner.
struct KernelFamilyInfo {
  const char* name;
  const char* const* field_names;  // kFields entries, nullptr for unused
  // The body of the specialized source (after the header comment).
  std::string (*source_body)(const KernelSpec&);
};

const KernelFamilyInfo& family_info(KernelFamily family);

// "gather unit=16 index=8 dims=2 ...": the spec as a human reads it.
std::string describe_spec(const KernelSpec& spec);

}  // namespace jitops
