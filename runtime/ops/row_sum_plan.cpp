#include "runtime/ops/row_sum_plan.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "jit/scatter_source.h"
#include "jitops/row_sort_params.h"
#include "jitops/scatter_params.h"

namespace jitops {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMinBytes = int64_t(64) << 20;  // of source, for row sums to pay
std::atomic<int> g_mode{1};

// Where sorting pays, from the scatter_add bench case (2^20 rows of 128
// float32 into 100000: atomics 368 us, 42% of copy) and the sort's own cost
// (four launches, ~15 us): enough elements that the adds dominate, rows wide
// enough for a warp, at most 64 rows per destination on average (hot rows
// stay with the atomic kernels, whose threads merge equal destinations), and
// a scan no longer than the rows.
// 16-bit floats keep the atomic kernels: sm_90 adds 8 of them per vector
// reduction, and on the bench's scatter_add they took 153 us against 220-244
// us for sorting (70 us) and summing (benchmarks/NOTES.md item 21).
bool pays(const RowSumLayout& l, int64_t row_bytes, int element) {
  if (g_mode.load() == 2) return true;
  if (element == kElemFloat16 || element == kElemBFloat16) return false;
  return l.rows >= 4096 && l.rows * row_bytes >= kMinBytes && row_bytes >= 128 &&
         l.rows <= 64 * l.destinations && l.destinations <= 16 * l.rows;
}

bool is_float_element(int e) {
  return e == kElemFloat16 || e == kElemBFloat16 || e == kElemFloat32 || e == kElemFloat64;
}

}  // namespace

void set_row_sum_mode(int mode) { g_mode = mode; }

size_t RowSumLayout::zeroed_words() const { return size_t(destinations + tiles + 1); }
size_t RowSumLayout::scratch_words() const { return zeroed_words() + size_t(2 * rows); }

RowSumLayout row_sum_layout(const ScatterProblem& p) {
  RowSumLayout l;
  const int mode = g_mode.load();
  if (mode == 0 || p.op != kScatterAdd || p.counts || !is_float_element(p.element)) return l;
  // Every add call asks: refuse the small ones before copying and collapsing
  // the space (pays() wants at least kMinBytes of source).
  if (mode == 1 && p.space.numel() * p.element_bytes < kMinBytes) return l;
  IterationSpace s = p.space;
  s.operands = kScatterOperands;
  collapse(s);
  // Two dims: rows (the index varies, self moves only through it) and a
  // contiguous row in src and self (the index constant along it).
  if (s.ndim != 2 || s.strides[kIndexOperand][0] == 0 || s.strides[kIndexOperand][1] != 0 ||
      s.strides[kSelfOperand][0] != 0 || s.strides[kSelfOperand][1] != 1 || s.strides[kSrcOperand][1] != 1)
    return l;
  l.rows = s.sizes[0];
  l.destinations = p.axis_size;
  if (l.rows >= (int64_t(1) << 31) || l.destinations > int64_t(kRowSortTile) * kRowSortMaxTiles) return l;
  const int64_t length = s.sizes[1];
  l.index_stride = s.strides[kIndexOperand][0];
  l.position_stride = s.strides[kIndexPositionOperand][0];
  l.src_row_stride = s.strides[kSrcOperand][0];
  l.self_row_stride = p.axis_stride;
  // The widest unit (up to 16 bytes) that every row start keeps aligned.
  for (int v = 16 / p.element_bytes; v >= 1; v /= 2) {
    const uintptr_t bytes = uintptr_t(v) * p.element_bytes;
    if (length % v == 0 && l.src_row_stride % v == 0 && l.self_row_stride % v == 0 &&
        reinterpret_cast<uintptr_t>(p.src) % bytes == 0 && reinterpret_cast<uintptr_t>(p.self) % bytes == 0) {
      l.vec = v;
      break;
    }
  }
  l.row_units = length / l.vec;
  l.tiles = int((l.destinations + kRowSortTile - 1) / kRowSortTile);
  l.applies = pays(l, length * p.element_bytes, p.element);
  return l;
}

void plan_row_sum(const ScatterProblem& p, const RowSumLayout& l, int* scratch, const DeviceInfo& device,
                  IndexErrorSlot* error_slot, std::vector<LaunchPlan>& plans) {
  RowSortParams params{};
  params.index = p.index;
  params.src = p.src;
  params.self = p.self;
  params.error = error_slot;
  params.counts = scratch;
  params.tile_sums = scratch + l.destinations;
  params.total = params.tile_sums + l.tiles;
  params.perm = params.total + 1;
  params.dest = params.perm + l.rows;
  params.rows = l.rows;
  params.destinations = l.destinations;
  params.index_stride = l.index_stride;
  params.position_stride = l.position_stride;
  params.src_row_stride = l.src_row_stride;
  params.self_row_stride = l.self_row_stride;
  params.row_units = l.row_units;
  params.self_lo = p.self_lo;
  params.self_hi = p.self_hi;
  params.alpha = p.alpha;
  params.alpha_int = p.alpha_int;
  params.tiles = l.tiles;
  params.op_code = p.op_code;
  const unsigned row_blocks = grid_blocks(l.rows, kThreads, kThreads, device, 8);
  // Each count block ends with one atomic per tile of destinations on shared
  // addresses: 4096 blocks made that 4096 deep (count pass 27 us for 2^20
  // rows), two blocks per SM make it 264.
  const unsigned count_blocks = unsigned(std::min<int64_t>((l.rows + kThreads - 1) / kThreads, 2 * device.sm_count));
  const unsigned run_blocks = unsigned((l.rows + kRowSortRun * (kThreads / 32) - 1) / (kRowSortRun * (kThreads / 32)));
  const struct {
    int op;
    unsigned grid;
    const char* regime;
  } passes[] = {{kScatterRowCount, count_blocks, "row sums: count rows per destination"},
                {kScatterRowScan, unsigned(l.tiles), "row sums: first sorted position per destination"},
                {kScatterRowPlace, row_blocks, "row sums: place rows in destination order"},
                {kScatterRowSum, run_blocks, "row sums: sum sorted rows per destination"}};
  using F = ScatterSpecFields;
  for (const auto& pass : passes) {
    LaunchPlan& plan = plans.emplace_back();
    plan.spec.family = KernelFamily::Scatter;
    plan.spec.fields[F::kElement] = pass.op == kScatterRowSum ? p.element : 0;
    plan.spec.fields[F::kIndexBytes] = pass.op == kScatterRowScan || pass.op == kScatterRowSum ? 0 : p.index_bytes;
    plan.spec.fields[F::kDims] = 2;
    plan.spec.fields[F::kOffsetBits] = 64;
    plan.spec.fields[F::kOp] = pass.op;
    plan.spec.fields[F::kVec] = pass.op == kScatterRowSum ? l.vec : 1;
    plan.spec.fields[F::kAlpha] = pass.op == kScatterRowSum && p.has_alpha;
    plan.spec.fields[F::kUnroll] = 1;
    plan.spec.fields[F::kMaxThreads] = kThreads;
    plan.grid[0] = std::max(1u, pass.grid);
    plan.block[0] = kThreads;
    plan.regime = pass.regime;
    plan.set_params(params);
  }
}

}  // namespace jitops
