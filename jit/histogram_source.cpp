#include "jit/histogram_source.h"

#include <stdexcept>
#include <string>

#include "jit/elementwise_source.h"

namespace jitops {
namespace {

const char* const kFieldNames[KernelSpec::kFields] = {"kind", "dtype", "out_dtype", "vec", "dims", "threads",
                                                      nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

const char* type_of(int dtype) { return required_cuda_type_name(dtype, "histogram"); }

std::string histogram_body(const KernelSpec& s) {
  using F = HistogramSpecFields;
  const auto& f = s.fields;
  const std::string dims = std::to_string(f[F::kDims]), vec = std::to_string(f[F::kVec]);
  const std::string x = type_of(f[F::kDType]);
  std::string call, bounds;
  if (f[F::kKind] == kHistogramRange)
    call = "jitops::histogram_range<" + x + ", " + vec + ">(p);";
  else if (f[F::kKind] == kHistogramCount)
    call = "jitops::histogram_count<" + x + ", " + type_of(f[F::kOutDType]) + ", " + vec + ">(p);";
  else
    call = "jitops::histogram_cluster<" + x + ", " + type_of(f[F::kOutDType]) + ", " + vec + ">(p);";
  if (f[F::kKind] == kHistogramCluster)  // the cluster's shape is the kernel's own: launched as a plain grid
    bounds = "__cluster_dims__(" + std::to_string(kHistogramClusterBlocks) + ", 1, 1) __launch_bounds__(" +
             std::to_string(f[F::kMaxThreads]) + ", 1)";
  else
    bounds = "__launch_bounds__(" + std::to_string(f[F::kMaxThreads]) + ", " + std::to_string(kHistogramBlocksPerSm) + ")";
  return "#include \"histogram.cuh\"\n\n"
         "extern \"C\" __global__ void " + bounds + "\n"
         "jitops_kernel(const jitops::HistogramParams<" + dims + "> p) {\n  " + call + "\n}\n";
}

}  // namespace

const KernelFamilyInfo& histogram_family_info() {
  static const KernelFamilyInfo info{"histogram", kFieldNames, &histogram_body};
  return info;
}

}  // namespace jitops
