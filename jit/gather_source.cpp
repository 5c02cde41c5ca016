#include "jit/gather_source.h"

#include <algorithm>

#include "jitops/types.h"

namespace jitops {
namespace {

const char* const kFieldNames[KernelSpec::kFields] = {"unit",   "index",  "dims",   "offset", "wrap",  "flat",
                                                      "unroll", "threads", "tile_a", "tile_b", "index_each",
                                                      "reuse",  "row_local", "ragged"};

std::string gather_body(const KernelSpec& s) {
  using F = GatherSpecFields;
  const auto& f = s.fields;
  const int dims = f[F::kDims];
  const bool generic = dims == 0;
  const int param_dims = generic ? kMaxDims : dims;
  const int flat_dims = f[F::kFlat] > 0 ? f[F::kFlat] : 1;  // flat: x's collapsed dims, or kMaxDims
  const char* index_type = f[F::kIndexBytes] == 4 ? "int" : "long long";
  const std::string unit = "jitops::UnitOf<" + std::to_string(f[F::kUnitBytes]) + ">::type";
  const std::string wrap = f[F::kWrap] ? "true" : "false";
  const std::string flags = wrap + ", " + (f[F::kFlat] ? "true" : "false");
  const std::string threads = std::to_string(f[F::kMaxThreads]);
  std::string header = "gather.cuh", params, call;
  if (f[F::kTileA] > 0) {
    header = "gather_tile.cuh";
    params = "jitops::GatherTileParams<" + std::to_string(param_dims) + ", " + std::to_string(f[F::kOffsetBits]) + ">";
    call = "jitops::gather_tiles<" + unit + ", " + index_type + ", " + wrap + ", " + std::to_string(f[F::kTileA]) +
           ", " + std::to_string(f[F::kTileB]) + ", " + threads + ", " + std::to_string(f[F::kTileIndexEach]) + ">(p);";
  } else {
    const bool reuse = dims != 2 && f[F::kIndexReuse] > 1;
    const int ragged = f[F::kRagged];
    const std::string ragged_arg = ragged > 0 ? ", " + std::to_string(ragged) : "";
    params = "jitops::GatherParams<" + std::to_string(f[F::kOffsetBits]) + ", " + std::to_string(param_dims) + ", " +
             std::to_string(flat_dims) + (ragged > 0 ? ", false, true>" : reuse ? ", true>" : ">");
    if (dims == 2)
      call = "jitops::gather_2d<" + unit + ", " + index_type + ", " + flags + ", " + std::to_string(f[F::kUnroll]) +
             ", " + (f[F::kIndexReuse] > 1 ? "true" : "false") + ", " + (f[F::kRowLocal] ? "true" : "false") +
             ragged_arg + ">(p);";
    else
      call = "jitops::gather_linear<" + unit + ", " + index_type + ", " + std::to_string(param_dims) + ", " +
             (generic ? "true" : "false") + ", " + flags + ", " + std::to_string(f[F::kUnroll]) + ", " +
             std::to_string(std::max(1, f[F::kIndexReuse])) + ragged_arg + ">(p);";
  }
  return "#include \"" + header + "\"\n\n"
         "extern \"C\" __global__ void __launch_bounds__(" + threads + ")\n"
         "jitops_kernel(const " + params + " p) {\n  " + call + "\n}\n";
}

}  // namespace

const KernelFamilyInfo& gather_family_info() {
  static const KernelFamilyInfo info{"gather", kFieldNames, &gather_body};
  return info;
}

}  // namespace jitops
