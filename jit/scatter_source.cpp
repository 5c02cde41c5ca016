#include "jit/scatter_source.h"

#include <string>

#include "jitops/scatter_params.h"
#include "jitops/types.h"

namespace jitops {
namespace {

const char* const kFieldNames[KernelSpec::kFields] = {"element", "index", "dims", "offset", "op", "vec",
                                                      "alpha", "unroll", "threads", "lane_runs", "owned", "peel",
                                                      "tile_a", "tile_b", "index_each", "row_warps"};

// The unsigned integer of an element's width: what a kernel that only moves bits is instantiated with.
const char* bits_type(int element) {
  switch (element) {
    case kElemInt8: case kElemUInt8: return "unsigned char";
    case kElemInt16: case kElemFloat16: case kElemBFloat16: return "unsigned short";
    case kElemInt32: case kElemFloat32: return "unsigned int";
    default: return "unsigned long long";
  }
}

std::string scatter_body(const KernelSpec& s) {
  using F = ScatterSpecFields;
  const auto& f = s.fields;
  const int dims = f[F::kDims];
  const bool generic = dims == 0;
  const int param_dims = generic ? kMaxDims : dims;
  std::string element = scatter_element_type(f[F::kElement]);
  std::string params = "jitops::ScatterParams<" + std::to_string(f[F::kOffsetBits]) + ", " + std::to_string(param_dims) + ">";
  std::string call;
  const char* header = "scatter.cuh";
  const char* index_type = f[F::kIndexBytes] == 4 ? "int" : "long long";
  const std::string linear_args = element + ", " + index_type + ", " + std::to_string(param_dims) + ", " +
                                  (generic ? "true" : "false");
  if (f[F::kTileA] > 0) {  // index_copy_'s and index_add_'s tiles (scatter_tile.cuh): copies move bits
    const bool add = f[F::kOp] == kScatterAdd;
    return "#include \"scatter_tile.cuh\"\n\n"
           "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(f[F::kMaxThreads]) + ")\n"
           "jitops_kernel(const jitops::ScatterTileParams<" + std::to_string(param_dims) + ", " +
           std::to_string(f[F::kOffsetBits]) + "> p) {\n  jitops::index_tiles<" +
           (add ? element : std::string(bits_type(f[F::kElement]))) + ", " + index_type + ", " +
           std::to_string(f[F::kTileA]) + ", " + std::to_string(f[F::kTileB]) + ", " +
           std::to_string(f[F::kMaxThreads]) + ", " + (f[F::kTileIndexEach] ? "true" : "false") + ", " +
           (add ? "true" : "false") + ", " + (f[F::kAlpha] ? "true" : "false") + ">(p);\n}\n";
  }
  if (f[F::kOp] == kScatterFillMarked)  // index_fill_'s pass over self (fill_marked.cuh): bits of the width
    return "#include \"fill_marked.cuh\"\n\n"
           "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(f[F::kMaxThreads]) + ")\n"
           "jitops_kernel(const jitops::FillMarkedParams<" + std::to_string(f[F::kOffsetBits]) + ", " +
           std::to_string(dims) + "> p) {\n  jitops::fill_marked<" + bits_type(f[F::kElement]) + ", " +
           index_type + ", " + std::to_string(f[F::kVec]) + ">(p);\n}\n";
  // the row sums' kernels (row_sort.cuh, row_private.cuh)
  if (f[F::kOp] >= kScatterRowCount && f[F::kOp] <= kScatterRowPrivate) {
    const std::string vec_alpha_unroll = std::to_string(f[F::kVec]) + ", " + (f[F::kAlpha] ? "true" : "false") + ", " +
                                         std::to_string(f[F::kUnroll]) + ">";
    const bool is_private = f[F::kOp] == kScatterRowPrivate;
    const std::string op = is_private ? "row_private<" + element + ", " + index_type + ", " + vec_alpha_unroll
                           : f[F::kOp] == kScatterRowCount    ? "row_count<" + std::string(index_type) + ">"
                           : f[F::kOp] == kScatterRowScan     ? std::string("row_scan")
                           : f[F::kOp] == kScatterRowTileSort ? std::string("row_tile_sort")
                           : f[F::kOp] == kScatterRowPlace    ? "row_place<" + std::string(index_type) + ">"
                                                              : "row_sum<" + element + ", " + index_type + ", " +
                                                                    vec_alpha_unroll;
    return std::string("#include \"") + (is_private ? "row_private.cuh" : "row_sort.cuh") + "\"\n\n"
           "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(f[F::kMaxThreads]) + ")\n"
           "jitops_kernel(const jitops::RowSortParams p) {\n  jitops::" + op + "(p);\n}\n";
  }
  if (f[F::kOp] == kScatterPrivateAdd || f[F::kOp] == kScatterPrivateMul) {
    header = "scatter_private.cuh";
    call = "jitops::scatter_private<" + linear_args + ", " + (f[F::kAlpha] ? "true" : "false") + ", " +
           std::to_string(f[F::kUnroll]) + ", " + std::to_string(f[F::kVec]) + ", " +
           (f[F::kOp] == kScatterPrivateMul ? "jitops::kScatterMul" : "jitops::kScatterAdd") + ">(p);";
  } else if (f[F::kOp] == kScatterMeanFinish || f[F::kOp] == kScatterMeanReset) {
    call = "jitops::scatter_mean_finish<" + element + ", " + std::to_string(param_dims) + ", " +
           (generic ? "true" : "false") + ", " + (f[F::kOp] == kScatterMeanReset ? "true" : "false") + ", " +
           std::to_string(f[F::kUnroll]) + ">(p);";
  } else if (f[F::kOp] == kScatterDetKeys) {
    call = "jitops::scatter_det_keys<" + linear_args + ">(p);";
  } else if (f[F::kOp] == kScatterDetReduce) {
    call = "jitops::scatter_det_reduce<" + linear_args + ", " + (f[F::kAlpha] ? "true" : "false") + ">(p);";
  } else {
    const bool counted = f[F::kOp] == kScatterAddCounted;  // adds, the counts kept in the same pass
    std::string common = std::to_string(counted ? int(kScatterAdd) : f[F::kOp]) + ", " + std::to_string(f[F::kVec]) + ", " +
                         (f[F::kAlpha] ? "true" : "false") + ", " + std::to_string(f[F::kUnroll]);
    if (f[F::kOwned] >= 2) {
      header = "scatter_owned_rows.cuh";
      call = "jitops::scatter_owned_rows<" + linear_args + ", " + (f[F::kAlpha] ? "true" : "false") + ", " +
             std::to_string(f[F::kMaxThreads] / (32 * f[F::kRowWarps])) + ", " + std::to_string(f[F::kRowWarps]) +
             ", " + (f[F::kOwned] == 3 ? "true" : "false") + ">(p);";
    } else if (f[F::kOwned]) {
      header = "scatter_owned.cuh";
      call = "jitops::scatter_owned<" + linear_args + ", " + common + ">(p);";
    } else {
      // the trailing flags, where set: counts kept in the pass, ragged packs (never both)
      const std::string flags = counted ? ", true" : f[F::kPeel] ? ", false, true" : "";
      if (dims == 2)
        call = "jitops::scatter_2d<" + element + ", " + index_type + ", " + common + ", " +
               std::to_string(f[F::kRunsInLanes]) + flags + ">(p);";
      else
        call = "jitops::scatter_linear<" + element + ", " + index_type + ", " + std::to_string(param_dims) + ", " +
               (generic ? "true" : "false") + ", " + common + ", " + (f[F::kRunsInLanes] ? "true" : "false") + flags +
               ">(p);";
    }
  }
  return std::string("#include \"") + header + "\"\n\n"
         "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(f[F::kMaxThreads]) + ")\n"
         "jitops_kernel(const " + params + " p) {\n  " + call + "\n}\n";
}

}  // namespace

const char* scatter_element_type(int element) {
  static const char* const names[kNumScatterElements] = {
      "signed char", "unsigned char", "short", "int", "long long", "__half", "__nv_bfloat16", "float", "double"};
  return element >= 0 && element < kNumScatterElements ? names[element] : "?";
}

KernelSpec scatter_spec(int element, int index_bytes, int dims, int offset_bits, int op, int vec, int unroll,
                        int threads) {
  using F = ScatterSpecFields;
  KernelSpec spec;
  spec.family = KernelFamily::Scatter;
  spec.fields[F::kElement] = element;
  spec.fields[F::kIndexBytes] = index_bytes;
  spec.fields[F::kDims] = dims;
  spec.fields[F::kOffsetBits] = offset_bits;
  spec.fields[F::kOp] = op;
  spec.fields[F::kVec] = vec;
  spec.fields[F::kUnroll] = unroll;
  spec.fields[F::kMaxThreads] = threads;
  return spec;
}

const KernelFamilyInfo& scatter_family_info() {
  static const KernelFamilyInfo info{"scatter", kFieldNames, &scatter_body};
  return info;
}

}  // namespace jitops
