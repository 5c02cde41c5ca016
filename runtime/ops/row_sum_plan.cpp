#include "runtime/ops/row_sum_plan.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "jit/scatter_source.h"
#include "jitops/row_sort_params.h"
#include "jitops/scatter_params.h"

namespace jitops {
namespace {

constexpr int kThreads = kRowSortThreads;
constexpr int64_t kMinBytes = int64_t(64) << 20;  // of source, for sorted row sums to pay
constexpr int64_t kMinPrivateBytes = int64_t(1) << 20;  // ... for private copies (one launch)
constexpr int kPrivateMinWarps = 4;      // copies a block, at least: fewer leave too few loads in flight
constexpr int kPrivateRowsPerCopy = 64;  // at least, else fewer blocks
constexpr int kRegistersPerSm = 65536;   // 32-bit, sm_70 to sm_90 (a block's at most)
constexpr int kSumWarpsPerSm = 64;       // sums: warps an SM is given work for (a full SM's threads)
std::atomic<int> g_mode{1};
std::atomic<int> g_private_shared{232448};  // bytes of copies an SM holds (what is left is L1)
std::atomic<int> g_private_in_flight{32};   // rows a warp loads at a time
std::atomic<int> g_private_warps{8};        // a block, at least, where narrower units allow (x2 for 16-bit)
// Sorted rows' sums: rows a group of lanes loads at a time, warps a block
// (few a warp, many warps: measured best, benchmarks/NOTES.md item 32).
std::atomic<int> g_sum_in_flight{4};
std::atomic<int> g_sum_warps{8};

// Rows in flight a warp of a block of `warps`: halved from `wanted` until the
// block's registers hold them, beside ~56 for the rest (more would spill).
int fit_in_flight(int wanted, int unit_words, int warps) {
  int in_flight = wanted;
  while (in_flight > 2 && in_flight * unit_words + 56 > kRegistersPerSm / (32 * warps)) in_flight /= 2;
  return in_flight;
}

// Where sorting pays, from the scatter_add bench case (2^20 rows of 128
// float32 into 100000: atomics 368 us, 42% of copy) and the sort's own cost
// (five launches): enough elements that the adds dominate, rows wide
// enough (below), at most 64 rows per destination on average (hot rows
// stay with the atomic kernels, whose threads merge equal destinations), and
// destination rows that do not fit in half the L2, where the atomics
// read-modify-write their sectors from DRAM: into
// rows that fit, the atomics stay in L2 (float64 rows of 512 into 854, 3.5
// MB: atomics 62 us, sums 87-161; float32 rows of 300 into 17000, 20 MB:
// atomics 114, sums 154; NOTES 70-71).
// 16-bit floats keep the atomic kernels: sm_90 adds 8 of them per vector
// reduction, and on the bench's scatter_add they took 155 us against 216 us
// for sorting (36 us) and summing (benchmarks/NOTES.md items 21, 30).
// The sort costs the same a row whatever its width, and the adds it saves grow
// with the row and its duplicates. Which index the call holds decides the
// rest, and the planner cannot see it: on 112 plans of the old rule (rows of
// 256 bytes or more, 768 bytes of them a destination; seeds 100-1905 and
// 6400-7000, H200, NOTES 114) sorting ran 0.78x of the atomics on sorted
// indices (the atomic kernel combines their runs), 0.98x at random, and 1.4-1.8x
// on 8 hot destinations, whose adds contend on a few rows. A sample of the
// index deciding on the device cost ~25 us a call (its launch, and five
// passes returning at once), more than it saved (NOTES 114). So the rows sort
// only where they won at random too: 3 or more a destination on average, of
// 512 bytes or more (the bench's scatter_add: 10.5 rows of 512 bytes, 220 us
// against atomics' 368; at random below that, 0.65-0.95x), or of 256 bytes
// from 8 a destination on (the training bench's GNN layer, 16 rows of 256
// bytes a node; rows of 256 bytes, 3-4 a destination at random: 0.78-0.88x
// on the H200, where on an H100 4-8 a destination had sorted faster, 184-256
// us against 234-278, NOTES 77).
// There sorted indices still lose (0.52-0.91x), and hot rows below it stay
// with the atomics (PyTorch's own speed there).
constexpr int64_t kMinRowsPerDestination = 3;
constexpr int64_t kMinRowBytes = 512;
constexpr int64_t kMinNarrowRowsPerDestination = 8;  // ... for rows of 256 to 511 bytes
bool pays(const RowSumLayout& l, int64_t row_bytes, int element, const DeviceInfo& device) {
  if (g_mode.load() == 2) return true;
  if (element == kElemFloat16 || element == kElemBFloat16) return false;
  const int64_t per_destination = row_bytes >= kMinRowBytes ? kMinRowsPerDestination : kMinNarrowRowsPerDestination;
  return l.rows >= 4096 && l.rows * row_bytes >= kMinBytes && row_bytes >= 256 &&
         l.rows >= per_destination * l.destinations && l.rows <= 64 * l.destinations &&
         device.past_half_l2(l.destinations * row_bytes);
}

// Private copies (templates/row_private.cuh). Fits when a block holds
// kPrivateMinWarps copies (as many as the shared memory budget takes, up to
// twice the target below). A copy's warps split a row's units, 32 each, and
// the unit shrinks (down to one element) until a row has a unit per lane and
// the block g_private_warps warps or more, for more loads in flight (up to
// twice that many; a warp loops over the rest of a row). One block per SM
// (its launch bounds then give it all the SM's registers). Pays with at
// least 4 rows per destination and block (each block adds its copies'
// touched units to self once): the bench's hot rows (2^20 into 64) took
// 547 us as atomics, every index equal 693 us (benchmarks/NOTES.md item 31).
bool plan_private_copies(RowSumLayout& l, int element_bytes, int64_t length, const DeviceInfo& device) {
  if (l.destinations < 1) return false;
  const int64_t acc_bytes = element_bytes == 8 ? 8 : 4;
  const int64_t copy = l.destinations * length * acc_bytes;
  if (copy * kPrivateMinWarps > device.shared_per_block_optin) return false;
  const int64_t budget = std::min<int64_t>(g_private_shared.load(), device.shared_per_block_optin);
  // 16-bit floats do a float32 row's work for half its bytes: twice the warps
  // (benchmarks/NOTES.md item 31: 7 -> 14 warps left float32 where it was,
  // 28 made it slower; float16 was fastest at 28).
  const int target = g_private_warps.load() * (element_bytes == 2 ? 2 : 1), most = 2 * target;
  const int copies = int(std::clamp<int64_t>(budget / copy, kPrivateMinWarps, most));
  auto groups = [&](int v) { return (length / v + 31) / 32; };  // of 32 units a row
  int vec = l.vec;
  while (vec > 1 && vec * acc_bytes > 16) vec /= 2;
  while (vec > 1 && (copies * groups(vec) < target || length / vec < 32)) vec /= 2;
  const int warps = copies * int(std::max<int64_t>(1, std::min<int64_t>(groups(vec), most / copies)));
  // Rows in flight a warp: as many (up to 32) as the registers hold; 16 for
  // units of one word or of doubles (ptxas took 222 registers for 32
  // one-word units, ~64 for 16, and spilled 168 bytes for 32 doubles in 128).
  const int unit_words = int((vec * element_bytes + 3) / 4);
  int in_flight = g_private_in_flight.load();
  if (unit_words == 1 || element_bytes == 8) in_flight = std::min(in_flight, 16);
  in_flight = fit_in_flight(in_flight, unit_words, warps);
  const int64_t wanted = (l.rows + int64_t(copies) * kPrivateRowsPerCopy - 1) / (int64_t(copies) * kPrivateRowsPerCopy);
  l.vec = vec;
  l.row_units = length / vec;
  l.copies = copies;
  l.warps = warps;
  l.in_flight = in_flight;
  l.blocks = unsigned(std::max<int64_t>(1, std::min<int64_t>(device.sm_count, wanted)));
  l.shared_bytes = unsigned(copies * copy);
  return true;
}

bool is_float_element(int e) {
  return e == kElemFloat16 || e == kElemBFloat16 || e == kElemFloat32 || e == kElemFloat64;
}

}  // namespace

void set_row_sum_mode(int mode) { g_mode = mode; }
void set_row_private_shape(int shared_bytes, int in_flight, int warps) {
  g_private_shared = shared_bytes;
  g_private_in_flight = in_flight;
  g_private_warps = warps;
}
void set_row_sum_shape(int in_flight, int warps) {
  int pow2 = 2;  // a power of two from 2 to 32: two halves, and halving (fit_in_flight) keeps it even
  while (pow2 < 32 && pow2 * 2 <= in_flight) pow2 *= 2;
  g_sum_in_flight = pow2;
  g_sum_warps = warps;
}

size_t RowSumLayout::scratch_words() const {
  if (private_copies) return 0;
  // tile sums, total, tile starts, chunk counts, chunks in order, in order, one word to align the pairs,
  // bucketed and sorted pairs
  return size_t(tiles) + 1 + size_t(tiles) + size_t(tiles) * size_t(chunks) + size_t(chunks) + 1 + 1 +
         size_t(4 * rows);
}

bool row_sums_considered(const ScatterProblem& p) {
  const int mode = g_mode.load();
  if (mode == 0 || p.op != kScatterAdd || p.counts || !is_float_element(p.element)) return false;
  // Either way wants at least kMinPrivateBytes of source.
  return mode != 1 || p.space.numel() * p.element_bytes >= kMinPrivateBytes;
}

RowSumLayout row_sum_layout(const ScatterProblem& p, const DeviceInfo& device) {
  RowSumLayout l;
  if (!row_sums_considered(p)) return l;
  const int mode = g_mode.load();
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
  l.chunk_rows = std::max<int64_t>(kRowSortMinChunk, (l.rows + kRowSortMaxChunks - 1) / kRowSortMaxChunks);
  l.chunks = int((l.rows + l.chunk_rows - 1) / l.chunk_rows);
  RowSumLayout copies = l;
  // Private copies also want a block on every SM: with fewer, the atomics
  // (reading on every SM) were faster (9451 rows of 256 float32 into 42: 30
  // blocks 22.8 us, atomics 14.2; even at 131 blocks, 42000 rows; NOTES 64).
  if (mode != 2 && plan_private_copies(copies, p.element_bytes, length, device) &&
      (mode == 3 || (copies.rows >= 4 * copies.destinations * int64_t(copies.blocks) &&
                     copies.blocks >= unsigned(device.sm_count)))) {
    copies.applies = copies.private_copies = true;
    return copies;
  }
  l.applies = mode != 3 && pays(l, length * p.element_bytes, p.element, device);
  // The sum pass: a warp per run of kRowSortRun sorted rows. float64 sums in
  // blocks of half the warps (4 of the default 8): on an H200 they ran 3-23%
  // faster so (float64 rows of 512 sorted, 133.7 -> 103.2 us; at random
  // 205.7 -> 192.0), float32 the same (NOTES 114-115).
  l.warps = std::clamp(g_sum_warps.load() / (p.element_bytes == 8 ? 2 : 1), 1, 32);
  l.in_flight = fit_in_flight(g_sum_in_flight.load(), int((l.vec * p.element_bytes + 3) / 4), l.warps);
  // Few runs of wide rows leave the device short of warps, each looping over its rows' units 32 lanes at a
  // time: the runs split their units over several warps. 23451 float64 rows of 512 (733 runs, 5.6 warps an
  // SM, forced onto the sums) took 161 us; split for 32 warps an SM 111, for 64 87 (NOTES 71).
  const int64_t runs = (l.rows + kRowSortRun - 1) / kRowSortRun;
  const int64_t unit_groups = (l.row_units + 31) / 32;  // a warp's lanes take 32 units at a time on wide rows
  const int64_t wanted = int64_t(device.sm_count) * kSumWarpsPerSm;
  l.unit_splits = int(std::clamp<int64_t>(wanted / std::max<int64_t>(1, runs), 1, unit_groups));
  l.blocks = unsigned((runs * l.unit_splits + l.warps - 1) / l.warps);
  return l;
}

void plan_row_sum(const ScatterProblem& p, const RowSumLayout& l, int* scratch, const DeviceInfo& device,
                  IndexErrorSlot* error_slot, std::vector<LaunchPlan>& plans) {
  RowSortParams params{};
  params.index = p.index;
  params.src = p.src;
  params.self = p.self;
  params.error = error_slot;
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
  params.op_code = p.op_code;
  params.copies = l.copies;
  params.unit_splits = l.unit_splits;
  // One launch of the scatter family's 2-D, 64-bit row kernels; the fields a
  // kernel does not use stay 0, so that its specializations are shared.
  auto add_launch = [&](int op, int element, int index_bytes, int vec, bool alpha, int unroll, unsigned threads,
                        unsigned grid, unsigned shared_bytes, const char* regime) {
    using F = ScatterSpecFields;
    LaunchPlan& plan = plans.emplace_back();
    plan.spec.family = KernelFamily::Scatter;
    plan.spec.fields[F::kElement] = element;
    plan.spec.fields[F::kIndexBytes] = index_bytes;
    plan.spec.fields[F::kDims] = 2;
    plan.spec.fields[F::kOffsetBits] = 64;
    plan.spec.fields[F::kOp] = op;
    plan.spec.fields[F::kVec] = vec;
    plan.spec.fields[F::kAlpha] = alpha;
    plan.spec.fields[F::kUnroll] = unroll;
    plan.spec.fields[F::kMaxThreads] = int(threads);
    plan.grid[0] = std::max(1u, grid);
    plan.block[0] = threads;
    plan.shared_bytes = shared_bytes;
    plan.regime = regime;
    plan.set_params(params);
  };
  if (l.private_copies) {
    add_launch(kScatterRowPrivate, p.element, p.index_bytes, l.vec, p.has_alpha, l.in_flight, unsigned(l.warps * 32),
               l.blocks, l.shared_bytes, "row sums: rows added into private copies of self's rows in shared memory");
    return;
  }
  params.tile_sums = scratch;
  params.total = params.tile_sums + l.tiles;
  params.tile_start = params.total + 1;
  params.chunk_tile = params.tile_start + l.tiles;
  // The pairs start on an even word (8-byte aligned): pad the words before.
  params.chunk_in_order = params.chunk_tile + int64_t(l.tiles) * l.chunks;
  params.in_order = params.chunk_in_order + l.chunks;
  int* after_counts = params.in_order + 1;
  params.bucketed = reinterpret_cast<int2*>(scratch + ((after_counts - scratch + 1) & ~int64_t(1)));
  params.sorted = params.bucketed + l.rows;
  params.chunk_rows = l.chunk_rows;
  params.chunks = l.chunks;
  params.tiles = l.tiles;
  // place: each bucket's first position and the chunk's rows per tile, and
  // its rows in tile order when they fit (templates/row_sort.cuh, row_place)
  const unsigned place_shared =
      unsigned(2 * 4 * l.tiles + (l.chunk_rows <= kRowSortStaged ? 8 * kRowSortStaged : 0));
  add_launch(kScatterRowCount, 0, p.index_bytes, 1, false, 1, kThreads, unsigned(l.chunks), 0,
             "row sums: count rows per tile of destinations");
  add_launch(kScatterRowScan, 0, 0, 1, false, 1, kThreads, unsigned(l.tiles), 0, "row sums: bucket positions per tile");
  add_launch(kScatterRowPlace, 0, p.index_bytes, 1, false, 1, kThreads, unsigned(l.chunks), place_shared,
             "row sums: place rows into tile buckets");
  add_launch(kScatterRowTileSort, 0, 0, 1, false, 1, kThreads, unsigned(l.tiles), 0,
             "row sums: sort each bucket by destination");
  // The sums read the index where the count found it sorted (templates/row_sort.cuh).
  add_launch(kScatterRowSum, p.element, p.index_bytes, l.vec, p.has_alpha, l.in_flight, unsigned(l.warps * 32),
             l.blocks, 0, "row sums: sum sorted rows per destination");
}

}  // namespace jitops
