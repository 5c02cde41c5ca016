#include "jit/upsample_source.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "jit/elementwise_source.h"

namespace jitops {
namespace {

const char* const kFieldNames[KernelSpec::kFields] = {"kind", "element", "vec", "offset", "unroll", "threads",
                                                      "nchw", "src_packed", "window_h", "window_w", "one_span", "per_item"};

std::string upsample_body(const KernelSpec& s) {
  using F = UpsampleSpecFields;
  const auto& f = s.fields;
  const std::string bits = std::to_string(f[F::kOffsetBits]), unroll = std::to_string(f[F::kUnroll]);
  const std::string vec = std::to_string(f[F::kVec]);
  std::string call;
  const bool forward =
      f[F::kKind] == kUpsampleForward || f[F::kKind] == kUpsampleForward2x || f[F::kKind] == kUpsampleRowsForward;
  std::string element;
  if (forward) {
    element = "jitops::UnitOf<" + std::to_string(f[F::kElement]) + ">::type";
  } else {
    element = required_cuda_type_name(f[F::kElement], "upsample");
  }
  switch (f[F::kKind]) {
    case kUpsampleForward: call = "jitops::upsample_forward<" + element + ", " + bits + ", " + unroll + ">(p);"; break;
    case kUpsampleForward2x:
      call = "jitops::upsample_forward_2x<" + element + ", " + vec + ", " + bits + ", " + unroll + ">(p);";
      break;
    case kUpsampleBackward: call = "jitops::upsample_backward<" + element + ", " + bits + ">(p);"; break;
    case kUpsampleBackward2x:
      call = "jitops::upsample_backward_2x<" + element + ", " + vec + ", " + bits + ", " + unroll + ">(p);";
      break;
    case kUpsampleRowsForward:
      call = "jitops::upsample_rows_forward<" + element + ", " + vec + ", " + unroll + ", " + bits + ", " +
             (f[F::kSrcPacked] ? "true" : "false") + ">(p);";
      break;
    case kUpsampleRowsBackward:
      call = "jitops::upsample_rows_backward<" + element + ", typename jitops::AccumulateOf<" + element + ">::type, " +
             vec + ", " + unroll + ", " + bits + ", " + std::to_string(f[F::kWindowH]) + ", " +
             std::to_string(f[F::kWindowW]) + ">(p);";
      break;
    case kUpsampleTilesBackward:
      call = "jitops::upsample_tiles_backward<" + element + ", typename jitops::AccumulateOf<" + element + ">::type, " +
             bits + ", " + (f[F::kNchwRows] ? "true" : "false") + ", " + (f[F::kOneSpan] ? "true" : "false") + ", " +
             std::to_string(f[F::kWindowH]) + ", " + std::to_string(f[F::kWindowW]) + ", " + unroll + ", " +
             std::to_string(std::max(1, f[F::kPerItem])) + ">(p);";
      break;
    default: throw std::logic_error("upsample: unknown kind " + std::to_string(f[F::kKind]));
  }
  const bool rows = f[F::kKind] == kUpsampleRowsForward || f[F::kKind] == kUpsampleRowsBackward;
  const std::string params = f[F::kKind] == kUpsampleTilesBackward ? "UpsampleTileParams"
                             : rows                                 ? "UpsampleRowParams"
                                                                    : "UpsampleParams";
  return "#include \"upsample.cuh\"\n\n"
         "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(f[F::kMaxThreads]) + ")\n"
         "jitops_kernel(const jitops::" + params + "<" + bits + "> p) {\n  " + call + "\n}\n";
}

}  // namespace

const KernelFamilyInfo& upsample_family_info() {
  static const KernelFamilyInfo info{"upsample", kFieldNames, &upsample_body};
  return info;
}

}  // namespace jitops
