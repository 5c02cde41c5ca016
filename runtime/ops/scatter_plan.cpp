#include "runtime/ops/scatter_plan.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "jit/scatter_source.h"
#include "jit/sort_source.h"
#include "jitops/scatter_params.h"
#include "jitops/sort_params.h"
#include "runtime/arg_error.h"
#include "runtime/int_math.h"
#include "runtime/ops/fill_marked_plan.h"
#include "runtime/ops/scatter_fitted_lanes.h"
#include "runtime/ops/scatter_index_inner.h"
#include "runtime/ops/scatter_mean.h"
#include "runtime/ops/scatter_owned_rows.h"
#include "runtime/ops/scatter_private_plan.h"
#include "runtime/ops/scatter_ragged.h"
#include "runtime/ops/scatter_tile_plan.h"

namespace jitops {
namespace {

constexpr int64_t kInt32Limit = int64_t(1) << 31;
constexpr int64_t kSectorBytes = 32;  // the unit L2 reads, writes and reduces
constexpr int64_t kRowsFootprint = int64_t(16) << 20;  // bytes of rows' destinations, well inside an L2
std::atomic<int64_t> g_small_index_threshold{16};
std::atomic<int> g_owned_walk_mode{-1};
std::atomic<int> g_cas_unroll{-1};
std::atomic<int> g_rows_always_meet{1};
std::atomic<int> g_prepare_order{3};
std::atomic<int> g_scatter_waves{0};
// Whether the indexed dim is self's innermost (the smallest stride of its dims of more than one element).
bool axis_innermost(const ScatterProblem& p) {
  if (p.axis_size < 2) return false;
  const int64_t axis = p.axis_stride < 0 ? -p.axis_stride : p.axis_stride;
  for (int d = 0; d < p.space.ndim; ++d) {
    const int64_t st = p.space.strides[kSelfOperand][d];
    if (p.space.sizes[d] > 1 && st != 0 && (st < 0 ? -st : st) < axis) return false;
  }
  return true;
}

// Whether the pass reads src: not index_fill_'s stores, nor the identity
// stores and counts before a reduction (whose src strides plan_scatter drops).
bool reads_src(const ScatterProblem& p) {
  return p.op != kScatterFill &&
         !(p.op == kScatterPrepare && g_prepare_order.load(std::memory_order_relaxed) != 0 && axis_innermost(p));
}

// Whether the identity stores and counts that the index orders (the indexed
// dim self's innermost) walk the indexed dim innermost, their lanes landing
// within a row of self, rather than along the index's own innermost dim. A
// bfloat16 mean (include_self=True) of a sorted index along dim 0 of a
// transposed (94x65536): its counts, lanes along the index's rows, went to 32
// sectors a warp, 114 us against PyTorch's 67-us count (seed 1858). Over the
// 221 sweep plans of seeds 100-3400 that the order changes (H100, NOTES 107),
// the indexed dim innermost ran 1.14x faster in geomean (seeds under 1900 and
// the rest alike), 21 slower: stores where the other dims hold under 16 units
// lost most (a sorted index into int32 (1481093x7), 489 -> 917 us against
// PyTorch's 498: the index then read 28 bytes a lane), so those keep the
// index's order, and counts alone (no stores: include_self, or a mean's
// counting pass before its reset) always go. As ruled: 193 plans take it,
// 1.16x on them; below 0.97x of PyTorch 7 -> 4.
bool prepare_axis_first(const ScatterProblem& p) {
  const int mode = g_prepare_order.load(std::memory_order_relaxed);
  if (mode == 2) return true;
  if (mode != 3) return false;
  if (p.include_self) return true;
  int64_t along_axis = 1;
  for (int d = 0; d < p.space.ndim; ++d)
    if (p.space.strides[kSelfOperand][d] == 0) along_axis *= p.space.sizes[d];
  return p.space.numel() / std::max<int64_t>(1, along_axis) >= 16;
}

// Below this many units a call is about its launch, and the walk's order is
// not worth the planning time.
constexpr int64_t kWalkOrderMinUnits = int64_t(1) << 16;

// Max and min of float32 and float64: a read, then an integer reduction on
// the bits where the value changes (templates/jitops/float_extremum.cuh).
bool is_float_extremum(const ScatterProblem& p) {
  return (p.op == kScatterMax || p.op == kScatterMin) && (p.element == kElemFloat32 || p.element == kElemFloat64);
}

// The updates that are compare-and-swap loops: products, and max and min of
// 8- and 16-bit elements.
bool is_cas_update(const ScatterProblem& p) {
  return p.op == kScatterMul || ((p.op == kScatterMax || p.op == kScatterMin) && p.element_bytes <= 2);
}

// Updates templates/scatter.cuh's CasPack applies a pack at a time, by one
// compare-and-swap of the word the pack fills.
bool is_cas_pack(const ScatterProblem& p) {
  const bool narrow_int = p.element == kElemInt8 || p.element == kElemUInt8 || p.element == kElemInt16;
  return is_cas_update(p) || (p.op == kScatterAdd && narrow_int);
}
// The word a compare-and-swap pack fills: 4 bytes, the word an 8- or 16-bit
// element's own CAS takes anyway. 8-byte words (64-bit CAS) lost on max and
// min, whose update often leaves a word as it is and then needs no CAS, but
// needs a pack's every element unchanged: 16-bit floats' max and min 0.94x in
// geomean, down to 0.33x; float32 products 1.09x, down to 0.71x (NOTES 84).
constexpr int kCasPackBytes = 4;

// Moves V adjacent elements per access when the innermost dim is contiguous in
// self and src, does not vary the index, and strides and pointers allow it.
// Compare-and-swap updates of 8- and 16-bit elements go as packs that fill a
// 32-bit word, one CAS loop on it: lone bfloat16 products along rows of 32
// had lanes 2k and 2k+1 contend for each word (seed 708: 983 -> 325 us,
// PyTorch 505; 66 such plans of seeds 100-708 1.35x in geomean, NOTES 84).
// The owned walk (plain loads and stores of self) takes any pack up to
// max_bytes.
void choose_vector(ScatterProblem& p, int max_bytes, bool owned, int& vec) {
  vec = 1;
  const bool cas_pack = !owned && is_cas_pack(p);
  if (!owned && p.op != kScatterAdd && p.op != kScatterCopy && p.op != kScatterFill && !cas_pack) return;
  if (p.counts) return;
  if (cas_pack) max_bytes = std::min(max_bytes, kCasPackBytes);
  const int min_bytes = cas_pack ? kCasPackBytes : 2 * p.element_bytes;
  // Adds vectorize only where a pack goes out as one reduction (float32 as
  // red.v4/v2, 16-bit floats as packed pairs). For integers and float64 each
  // element is its own atomic, and a pack of V per lane strides V elements
  // across the warp, touching V times the sectors an atomic instruction: int32
  // rows of 64 ran at 0.58x PyTorch's with V = 4, float32 at 1.15x (NOTES 54).
  if (!owned && p.op == kScatterAdd && !cas_pack && p.element != kElemFloat32 && p.element != kElemFloat16 &&
      p.element != kElemBFloat16)
    return;
  IterationSpace& s = p.space;
  const int c = s.ndim - 1;
  const bool has_src = reads_src(p);
  if (s.strides[kSelfOperand][c] != 1 || s.strides[kIndexOperand][c] != 0) return;
  if (has_src && s.strides[kSrcOperand][c] != 1) return;
  for (int v = max_bytes / p.element_bytes; v > 1 && v * p.element_bytes >= min_bytes; v /= 2) {
    const int64_t bytes = int64_t(v) * p.element_bytes;
    bool ok = s.sizes[c] % v == 0 && p.axis_stride % v == 0 && reinterpret_cast<uintptr_t>(p.self) % bytes == 0 &&
              (!has_src || reinterpret_cast<uintptr_t>(p.src) % bytes == 0);
    for (int d = 0; d < c && ok; ++d)
      ok = s.strides[kSelfOperand][d] % v == 0 && (!has_src || s.strides[kSrcOperand][d] % v == 0);
    if (!ok) continue;
    // Offsets stay in elements: one unit of the inner dim is v elements.
    s.sizes[c] /= v;
    s.strides[kSelfOperand][c] = v;
    if (has_src) s.strides[kSrcOperand][c] = v;
    s.strides[kIndexPositionOperand][c] *= v;  // nonzero only for an expanded index: the unit's first element
    vec = v;
    collapse(s);
    return;
  }
}

// Elements in the run of self that dims not varying the index make dense
// (size > 1, strides 1, s1, s1*s2, ...): 1 when self has no dense dim there.
int64_t self_run_elements(const IterationSpace& s) {
  int64_t run = 1;
  for (bool grown = true; grown;) {
    grown = false;
    for (int d = 0; d < s.ndim; ++d) {
      if (s.strides[kIndexOperand][d] == 0 && s.sizes[d] > 1 && s.strides[kSelfOperand][d] == run) {
        run *= s.sizes[d];
        grown = true;
        break;
      }
    }
  }
  return run;
}

bool fits_32bit(const ScatterProblem& p) {
  const IterationSpace& s = p.space;
  if (s.numel() >= kInt32Limit) return false;
  // ragged packs shift a unit's offsets down by up to a pack (16 elements at most)
  const int64_t margin = p.peel_len > 0 ? 16 : 0;
  for (int k = 0; k < s.operands; ++k)
    if (k != kIndexPositionOperand && s.max_offset(k) + margin >= kInt32Limit) return false;
  const int64_t steps = p.axis_size > 0 ? p.axis_size - 1 : 0;
  if (s.max_offset(kSelfOperand) + steps * magnitude(p.axis_stride) >= kInt32Limit) return false;
  if (s.max_offset(kCountsOperand) + steps * magnitude(p.counts_axis_stride) >= kInt32Limit) return false;
  return p.axis_size < kInt32Limit && magnitude(p.self_lo) < kInt32Limit && magnitude(p.self_hi) < kInt32Limit;
}

template <int Bits, int Dims>
void fill_params(const ScatterProblem& p, IndexErrorSlot* slot, LaunchPlan& plan) {
  typedef ScatterParams<Bits, Dims> Params;
  typedef typename Params::Stride Stride;
  Params params;
  std::memset(&params, 0, sizeof(params));
  const IterationSpace& s = p.space;
  params.self = p.self;
  params.src = p.src;
  params.index = p.index;
  params.error = slot;
  params.counts = p.counts;
  params.numel = typename Params::Linear(s.numel());
  params.ndim = s.ndim;
  params.op_code = p.op_code;
  params.axis_size = p.axis_size;
  params.index_wrap = p.wrap_negative ? p.axis_size : 0;
  params.axis_stride = Stride(p.axis_stride);
  params.counts_axis_stride = Stride(p.counts_axis_stride);
  params.self_lo = Stride(p.self_lo);
  params.self_hi = Stride(p.self_hi);
  params.alpha = p.alpha;
  params.alpha_int = p.alpha_int;
  params.include_self = p.include_self ? 1 : 0;
  params.mean = p.mean ? 1 : 0;
  params.keys = p.keys;
  params.rows_first = p.rows_first ? 1 : 0;
  params.block_rows = p.block_rows;
  params.peel_len = p.peel_len;
  params.peel_src_step = p.peel_src_step;
  params.peel_fixed_phase = p.peel_fixed_phase ? 1 : 0;
  std::memcpy(params.value, p.value, sizeof(params.value));
  for (int d = 0; d < Dims; ++d) {
    const bool used = d < s.ndim;
    params.sizes[d] = typename Params::Divider(used ? s.sizes[d] : 1);
    params.self_strides[d] = used ? Stride(s.strides[kSelfOperand][d]) : 0;
    params.src_strides[d] = used ? Stride(s.strides[kSrcOperand][d]) : 0;
    params.index_strides[d] = used ? Stride(s.strides[kIndexOperand][d]) : 0;
    params.counts_strides[d] = used ? Stride(s.strides[kCountsOperand][d]) : 0;
    params.index_positions[d] = used ? s.strides[kIndexPositionOperand][d] : 0;
  }
  plan.set_params(params);
}

template <int Bits>
void fill_for_dims(const ScatterProblem& p, int dims, IndexErrorSlot* slot, LaunchPlan& plan) {
  with_param_dims(dims, [&](auto d) { fill_params<Bits, decltype(d)::value>(p, slot, plan); });
}

void fill_for_dims(const ScatterProblem& p, int dims, int bits, IndexErrorSlot* slot, LaunchPlan& plan) {
  if (bits == 32)
    fill_for_dims<32>(p, dims, slot, plan);
  else
    fill_for_dims<64>(p, dims, slot, plan);
}

// Adds and products into private copies of a small self (runtime/ops/scatter_private_plan.h):
// one launch, a unit an element, 4 a thread at a time.
void plan_private_add(const ScatterProblem& p, const PrivateAddLayout& copies, IndexErrorSlot* slot,
                      LaunchPlan& plan) {
  const int dims = p.space.ndim <= kSpecializedDims ? p.space.ndim : 0;
  const int bits = fits_32bit(p) ? 32 : 64;
  plan.spec = scatter_spec(p.element, p.index_bytes, dims, bits, copies.op, copies.flush_vec, 4, 256);
  plan.spec.fields[ScatterSpecFields::kAlpha] = p.has_alpha;
  plan.regime = "private copies of self";
  plan.tunable = false;
  fill_for_dims(p, dims, bits, slot, plan);
  plan.block[0] = 256;
  plan.grid[0] = copies.blocks;
  plan.shared_bytes = copies.shared_bytes;
}

// The owned walks' order: the terms' axis first (the kernels' dim 0), the owners' dims after it as they were.
void terms_axis_first(IterationSpace& s, int axis) {
  int order[kMaxDims + 16];
  order[0] = axis;
  for (int d = 0, k = 1; d < s.ndim; ++d)
    if (d != axis) order[k++] = d;
  permute_dims(s, order);
}

// index_add_ through self's rows in shared memory (runtime/ops/scatter_owned_rows.h): the terms' axis first, as
// the owned walk takes it, a block a group of rows after another.
void plan_owned_rows(ScatterProblem p, const OwnedRowsLayout& rows, IndexErrorSlot* slot, const DeviceInfo& device,
                     LaunchPlan& plan) {
  IterationSpace& s = p.space;
  terms_axis_first(s, rows.axis);
  const int dims = s.ndim <= kSpecializedDims ? s.ndim : 0;
  const int bits = fits_32bit(p) ? 32 : 64;
  using F = ScatterSpecFields;
  plan.spec = scatter_spec(p.element, p.index_bytes, dims, bits, kScatterAdd, 1, 1, rows.threads);
  plan.spec.fields[F::kAlpha] = p.has_alpha;
  plan.spec.fields[F::kOwned] = rows.src_along_terms ? 3 : 2;
  plan.spec.fields[F::kRowWarps] = rows.row_warps;
  plan.regime = "owned rows in shared memory";
  plan.tunable = false;
  fill_for_dims(p, dims, bits, slot, plan);
  const int64_t rows_a_block = rows.threads / (32 * rows.row_warps) * 32;
  plan.block[0] = unsigned(rows.threads);
  plan.grid[0] = grid_blocks(s.numel() / s.sizes[0], rows_a_block, rows.threads, device, kUncappedWaves);
  plan.shared_bytes = rows.shared_bytes;
}

// What an accumulate launch depends on: element, index, op, the inner and
// outer collapsed sizes, and the destination count along the axis (how
// often terms collide).
TuningPoint scatter_point(const ScatterProblem& p) {
  const IterationSpace& s = p.space;
  const int64_t inner = s.ndim ? s.sizes[s.ndim - 1] : 1;
  TuningPoint point;
  point.family = KernelFamily::Scatter;
  point.traits = {p.element, p.index_bytes, p.op, p.has_alpha, std::min(s.ndim, kMaxDims + 1),
                  int(s.ndim >= 2 && s.strides[kIndexOperand][0] != 0)};
  point.bucket = {size_bucket(inner), size_bucket(s.numel() / std::max<int64_t>(1, inner)), size_bucket(p.axis_size)};
  return point;
}

// Rows reached through the index along the inner dim, whose destinations may
// lie a few bytes apart in self (a sliced or transposed self seen from the
// index's side): a warp across a row writes a scattered sector a lane, where
// the next rows' writes would share sectors. The warp's lanes along the index
// (the rest take further rows) that touch the fewest sectors, writes counted
// twice (they are read-modify-writes in L2): index_add_ of float32 rows
// 8 bytes apart from a transposed source wrote 32 sectors a warp at 0.52x
// PyTorch's (seed 31); 8 lanes wide, 8 sectors written and 4 read, 1.03x.
// Where the indexed dim spans a few bytes (rows of 3-27 bytes along their own
// dim), a row's lanes write the same sectors, and the lanes go along the
// index: 75 plans of seeds 100-400 1.013x in geomean (noise 0.996x), below
// 0.97x PyTorch 12 -> 8; float16 through a full index along dim 2 of
// (18997x16x13) 1.72x, a sliced float16 (32768x128x5) fill 1.27x; a sorted
// float16 full index into rows of 6, 0.78x (its warp's 8 lanes a row meet on
// one destination), small fills of int8 rows of 3-8 bytes 0.88-0.91x (NOTES 84).
unsigned lanes_along_index(const ScatterProblem& p) {
  const IterationSpace& s = p.space;
  const int64_t self_step = magnitude(s.strides[kSelfOperand][0]) * p.element_bytes;  // from row to row
  const int64_t src_step = magnitude(s.strides[kSrcOperand][1]) * p.element_bytes;    // from lane to lane (0: fills)
  if (self_step >= kSectorBytes) return 1024;  // no sector to share between rows
  auto sectors = [](int64_t bytes) { return std::max<int64_t>(1, (bytes + kSectorBytes - 1) / kSectorBytes); };
  // The bytes one row's destinations span: where they are few, a row's lanes write the same sectors.
  const int64_t axis_span = std::max<int64_t>(0, p.axis_size - 1) * magnitude(p.axis_stride) * p.element_bytes +
                            p.element_bytes;
  unsigned best = 32;
  int64_t best_cost = -1;
  for (unsigned lanes = 32; lanes >= 1; lanes /= 2) {
    const int64_t rows = 32 / lanes;
    const int64_t reads = src_step == 0 ? rows : rows * sectors(lanes * src_step);
    const int64_t writes = std::min(lanes * sectors(rows * self_step), sectors((rows - 1) * self_step + axis_span));
    const int64_t cost = reads + 2 * writes;
    if (best_cost < 0 || cost < best_cost) best = lanes, best_cost = cost;
  }
  return best;
}

// The dims the index varies along: 1 for index_add_'s (one dim of the source)
// and the fills' and copies', every dim of the index for a full index.
int index_dims(const IterationSpace& s) {
  int dims = 0;
  for (int d = 0; d < s.ndim; ++d) dims += s.strides[kIndexOperand][d] != 0;
  return dims;
}

// Sectors the 32 lanes of a warp touch when the units go innermost-first in
// `order` (outermost first, as memory_order gives it): src's and the index's
// reads, and self's writes counted twice (read-modify-writes in L2). Where
// the index picks a destination from a span wider than a sector, units with
// different index elements write different sectors.
int64_t warp_sectors(const ScatterProblem& p, const int* order) {
  const IterationSpace& s = p.space;
  const bool wide_axis = p.axis_size * magnitude(p.axis_stride) * p.element_bytes > kSectorBytes;
  const bool has_src = reads_src(p);
  int64_t writes[32], src_reads[32], index_reads[32];
  int n = 0;
  for (int64_t unit = 0; unit < 32; ++unit) {
    int64_t rest = unit, self_off = 0, src_off = 0, index_off = 0;
    for (int k = s.ndim - 1; k >= 0 && rest > 0; --k) {
      const int d = order[k];
      const int64_t at = rest % s.sizes[d];
      rest /= s.sizes[d];
      self_off += at * s.strides[kSelfOperand][d];
      src_off += at * s.strides[kSrcOperand][d];
      index_off += at * s.strides[kIndexOperand][d];
    }
    if (rest > 0) break;  // fewer than 32 units in all
    // a unit's destination sector, told apart by its index element where the index spreads them
    writes[n] = self_off * p.element_bytes / kSectorBytes * 1000003 + (wide_axis ? index_off : 0);
    src_reads[n] = src_off * p.element_bytes / kSectorBytes;
    index_reads[n] = index_off * p.index_bytes / kSectorBytes;
    ++n;
  }
  auto distinct = [n](int64_t* keys) {
    std::sort(keys, keys + n);
    return int64_t(std::unique(keys, keys + n) - keys);
  };
  return 2 * distinct(writes) + distinct(index_reads) + (has_src ? distinct(src_reads) : 0);
}

// memory_order's order lets self decide, then src; the index, read at every
// unit and often the widest operand, has no say. Where another dim innermost
// lets a warp touch far fewer sectors, it goes innermost (the rest keep their
// order): float16 from a fully transposed src through a full int64 index
// along a dim of 2 walked the index 40 bytes a lane and src 1 KB a lane
// (1106 us, PyTorch 912); with the index's own inner dim innermost, its reads
// are dense and src's sectors come back from L2 at the next row.
//
// Only for walks that stay linear (three dims or more after collapsing). Where
// the order collapses to two, the 2-D walk's threads loop over the rows and
// reuse the sectors of the dim outside the lanes: float16 from src (20021, 1,
// 10250752) through the same index ran 271 us with its lanes along the dense
// src (the index's 40-byte groups read by one thread, row after row), 382
// with them along the index's inner dim of 5, the sectors a warp touches
// 42 -> 15.
// For copies, also a dim just outside the innermost. A warp then spans the
// innermost dim's few units times a few of the moved dim's, which can be
// dense in the other operand: index_copy_ float16 (128x8192x8x4) along its
// inner dim of 4 from a fully transposed src walked src's sectors 2 MB a
// lane (37 sectors a warp: 845 us, PyTorch 386); with src's dense dim
// second, a warp's 8 of them share src's sectors (21 a warp): 195 us
// (float32 920 -> 238, int8 402 -> 174, float64 1002 -> 217). The one add
// it moved in seeds 40-119 ran slower (float32 index_add_ from a transposed
// src, 23.8 -> 27.8 us), so adds keep the innermost move alone (NOTES 77).
// 16-bit float adds through a 1-D index (index_add_) keep the tuned order: of
// the 22 such plans of seeds 100-721 the move changed, 19 ran faster without
// it, 1.30x in geomean (H100, NOTES 90; seed 721's bfloat16 (15x7x19x8192)
// from a transposed src 350 -> 227 us, PyTorch 273; 266's 59 -> 22), though
// the warp's sectors fell from 37 to 21: each lane's lone 16-bit add is a
// paired reduction of its own, and lanes spread over rows send each to
// another sector; the three that lost 0.70-0.92x still run 1.65-2.4x
// PyTorch's or already lost to it (seed 530's float16 0.90x -> 0.83x).
// Through a full index the move stays (seed 41's float16 1106 -> 795 us).
void prefer_fewest_sectors(const ScatterProblem& p, int* order) {
  const int n = p.space.ndim;
  if (n < 3 || p.space.numel() < kWalkOrderMinUnits) return;
  if (p.op == kScatterAdd && (p.element == kElemFloat16 || p.element == kElemBFloat16) && index_dims(p.space) == 1)
    return;
  const int64_t planned = warp_sectors(p, order);
  int64_t best = planned;
  int best_dim = -1, best_place = -1;
  int candidate[kMaxDims + 16];
  // order[inner] taken out and put back at `place` (n - 1: innermost; n - 2: just outside it).
  auto move = [&](int inner, int place, int* out) {
    int m = 0;
    for (int k = 0; k < n; ++k) {
      if (k == inner) continue;
      if (m == place) out[m++] = order[inner];
      out[m++] = order[k];
    }
    if (m == place) out[m++] = order[inner];
  };
  for (int inner = 0; inner < n - 1; ++inner) {  // order[n - 1] is innermost already
    if (p.space.sizes[order[inner]] == 1) continue;
    for (int place = n - 1; place >= (p.op == kScatterCopy ? n - 2 : n - 1); --place) {
      if (place == inner) continue;  // where it is
      move(inner, place, candidate);
      const int64_t cost = warp_sectors(p, candidate);
      if (cost < best) best = cost, best_dim = inner, best_place = place;
    }
  }
  if (best_dim < 0 || 4 * best > 3 * planned) return;  // a quarter fewer or keep the tuned order
  IterationSpace planned_space = p.space;  // only now: most calls stop above
  permute_dims(planned_space, order);
  collapse(planned_space);
  if (planned_space.ndim <= 2) return;
  move(best_dim, best_place, candidate);
  for (int k = 0; k < n; ++k) order[k] = candidate[k];
}

// Whether two of 32 consecutive units of the linear walk can name one
// destination. Units that differ in a dim where self moves differ in their
// destination (self does not overlap itself), so two that may meet differ
// only in dims where self does not move (the indexed dim's): they lie a
// product of the dims inside those apart, and within a warp only where that
// is under 32. Where they cannot, the lanes' tests go (H100, 57 such plans of
// seeds 100-143, the better of two runs: 1.06x in geomean; bfloat16 along dim
// 1 of (1024x4x2048), 150.4 -> 107.8 us, PyTorch 117.6; float16 (16x7x60379)
// into (16x2x60379) 100.7 -> 52.0). Counting every dim inside the indexed one,
// not the innermost alone (a short innermost dim that prefer_fewest_sectors
// moved in, its self stride a row's): 371 plans of seeds 100-721 1.011x,
// 0.82-1.57x (NOTES 90; seed 455's float16 index_add_ 118.6 -> 60.0 us,
// 721's bfloat16 350 -> 264).
bool lanes_may_share(const IterationSpace& s) {
  int64_t apart = 1;  // units between two that differ only in dims where self does not move
  for (int d = s.ndim - 1; d >= 0 && s.strides[kSelfOperand][d] != 0; --d) apart = std::min<int64_t>(apart * s.sizes[d], 32);
  return apart < 32;
}

// Whether the 2-D walk's warp combines lanes of different rows that met on
// one destination (LaneRuns 3), after a vote on whether two threads' units
// met. Where it paid (121 sweep plans of seeds 100-712, H100, NOTES 86):
// native reductions (adds, int32 / int64 max and min) where a warp spans 8
// rows or more (a row 4 lanes or fewer: of 8 hot rows, 8 picks hold about 5
// distinct, a third fewer reductions; 4 picks 3.3), 55 plans 1.31x in
// geomean, up to 2.2x, the least 0.85x; with 2 or 4 rows a warp 0.56-1.26x,
// sorted indices the worst (the match runs where units already met in their
// threads and saves little). Products, each a compare-and-swap loop, at any
// width: 17 plans 1.10x, 0.82-1.61x. Max and min that read first (16-bit
// CAS, float32 / float64 reductions on the bits) skip the updates that change
// nothing, which a hot element's mostly are: 0.59x and 0.70x, so never.
bool rows_may_meet(const ScatterProblem& p, const LaunchShape& shape) {
  if (shape.block[0] >= 32 || shape.unroll < 2) return false;
  const bool wide_int = p.element == kElemInt32 || p.element == kElemInt64;
  const bool native = p.op == kScatterAdd || ((p.op == kScatterMax || p.op == kScatterMin) && wide_int);
  return p.op == kScatterMul || (native && shape.block[0] <= 4);
}

// The 2-D walk's lanes: 0 where none of a warp's share a destination: the
// index is the same along a row, or self moves along the lanes' dim and a
// warp lies in one row (its lanes differ there); 1 where they may, so that
// compare-and-swap ops combine runs and peers; 2 where adds combine their
// runs too: the lanes walk the indexed dim, a warp in one row, or in a few
// rows of 32 or more where lanes_along_index narrowed it (not 16-bit floats).
// Seeds 100-143's 2-D adds through a full index, runs combined against not
// (H100, the better of two runs each): along the indexed dim, a warp in one
// row, 50 cases 1.16x in geomean, sorted and repeated indices up to 10.5x
// (seed 142's bfloat16 859 -> 81.5 us, 1639 terms a destination; PyTorch
// 517), a float16 index_add_ of 106 random values into 32 columns 0.91x;
// with a warp across rows of 2-12, 0.82-1.31x, most slower (float16
// (2097152x12) into 8: 130 -> 158 us); where self moves along the lanes no
// run can form, and the runs' test alone cost 0.88-0.91x (float64
// (5x1723975) along dim 0: 67.5 -> 76.8 us, registers 48 -> 62).
// A warp across rows of 32 or more (4-8 lanes a row where lanes_along_index
// counts fewer sectors so) combines its runs too (a run never crosses rows:
// their destinations differ): 96 plans of seeds 100-706 1.054x and 1.068x
// (old against old 1.016x), seed 706's sorted float64 (721x9021) into 2103
// 234 -> 57 us (PyTorch 125), 243's float32 sum 1469 -> 466; 16-bit floats
// 0.98x with two of 14 at 0.68x (float16 (5x577039) into 74084 random), so
// they keep 1 (NOTES 83). The rest 1.075x, the least 0.95x at 5 us.
// 3 instead of 0 where a warp spans rows and a thread takes several: lanes of
// one row never meet, but rows may at a column (8 hot rows), and threads whose
// units met on one destination are the sign (rows_may_meet).
// 4 instead of 2 where the blocks go columns first and a row's blocks fill the
// GPU twice: every block in flight adds into one row group, so a few hot
// values there take every atomic the GPU issues; lanes that repeat a
// destination out of order then combine (lanes_repeat in scatter.cuh). The 82
// such plans of seeds 100-716 (H100, two builds, NOTES 88): 1.21x in
// geomean; 8 hot values 2.08x (seed 716's float64 index_add_ 4853 -> 1067
// us, PyTorch 1138; seed 409's float16 scatter_add_ 1536 -> 429), random
// 1.00x, sorted 0.95x (the match's code costs warps that never take it: seed
// 427's int32 99 -> 136 us, PyTorch 407).
// 5 instead of 3 for products: the warp also matches where a lane and the one
// a row above it name one destination. A sorted index (the same along a row)
// puts a run of rows on one element in one warp, while a thread's units lie a
// block of rows apart and never meet, so the vote alone never fired; each lane
// of the run then took its own CAS loop on the element. H100 (NOTES 110): 160
// product plans of seeds 100-4399 1.19x in geomean, sorted 1.83x (seed 1764's
// float16 168 -> 20.5 us, PyTorch 296), random 0.99x, repeated 1.03x; seeds
// 2400-4399 (64, unseen by the rule) 1.22x; seed 1890's float64 rows of 4
// 929 -> 734 us (PyTorch 728).
int lane_runs_2d(const ScatterProblem& p, const LaunchShape& shape, const DeviceInfo& device) {
  const IterationSpace& s = p.space;
  const bool one_row_a_warp = shape.block[0] >= 32;
  const bool always = p.op == kScatterMul && g_rows_always_meet.load(std::memory_order_relaxed) != 0;
  const int apart = rows_may_meet(p, shape) ? (always ? 5 : 3) : 0;
  if (s.strides[kIndexOperand][1] == 0) return apart;
  if (s.strides[kSelfOperand][1] != 0) return one_row_a_warp || p.op == kScatterAdd ? apart : 1;
  const bool narrow_float = p.element == kElemFloat16 || p.element == kElemBFloat16;
  if (!(p.op == kScatterAdd && (one_row_a_warp || (s.sizes[1] >= 32 && !narrow_float)))) return 1;
  const bool row_fills_gpu = !p.rows_first && shape.grid[0] >= 2u * unsigned(device.sm_count);
  return row_fills_gpu ? 4 : 2;
}

// A full index (its own values along the rows) into the few rows a block of
// lanes_along_index's narrow warps would take at once: the warp goes along
// one row. lanes_along_index counts a warp's rows as writing shared sectors,
// which holds where neighbouring rows name the same values (an expanded
// index, or many rows sorted or repeated alike); into a few rows a row's 32
// lanes combine more of its runs and hot peers than 8 do, and a random row's
// reads come whole. H100, the 42 plans of seeds 100-716 whose blocks had more
// rows than the tensor (NOTES 89), with fold_block_rows below: 1.28x in
// geomean, below 0.97x of PyTorch 10 -> 0 (seed 274's random float64 (25 x
// 856287) 369 -> 331 us, PyTorch 322; 524's int32 785 -> 518; 159's float16
// mean 746 -> 166). For every full index (84 plans of many rows): 0.97x, 8 hot
// values 0.78x (seed 402's float32 into 16384 rows 379 -> 750 us). Where few
// rows have only a handful of blocks, the narrow warp stays (under two blocks
// an SM, up to 1.25x slower at 5-13 us).
bool few_rows_full_index(const ScatterProblem& p, unsigned lanes, const LaunchTuning& tune, const DeviceInfo& device) {
  const IterationSpace& s = p.space;
  const int64_t block_rows = tune.threads / std::max<int64_t>(1, lanes);
  return s.strides[kIndexOperand][0] != 0 && s.sizes[0] < block_rows &&
         s.numel() >= int64_t(2) * device.sm_count * tune.threads;
}

// Compare-and-swap updates (products; max and min of 8- and 16-bit elements)
// through a full index: the warp goes along one row too, whatever the rows.
// lanes_along_index's narrow warps (4 lanes over 8 rows a warp) count
// the rows' writes as sharing sectors, which holds for an index that is the
// same along the rows (index_add_'s), not for a full index, whose rows pick
// their own destinations; and a row's repeated destinations, which a warp's
// runs and peers combine before their CAS loops contend, meet in 4 lanes a
// warp instead of 32. H100, NOTES 98: the 40 plans of seeds 100-1802 with 8-
// and 16-bit elements 1.35x faster in geomean (products 1.56x, max 1.19x, min
// 1.10x; seed 815's bfloat16 product of 8192 terms a row into (128x1270)
// transposed 291.7 -> 36.4 us, PyTorch 1514.6), the slowest 1.29x (small
// grids of 10-14 us: seed 1186's float16 product 9.9 -> 12.7, PyTorch 22.3)
// and 1.21x (451's float16 amax 113.6 -> 137.4, PyTorch 223.3); the 19
// products of 4 and 8 bytes 1.32x (seed 1028's float32 along sorted rows
// 2002.5 -> 226.0 us, PyTorch 5170.7), the slowest 1.18x (1697's float32
// 98.5 -> 116.7, PyTorch 100.8). Max and min of 4 and 8 bytes, native
// reductions (after a read for floats), ran 1.04x slower (46 plans, int32
// amax up to 1.46x) and keep the narrow warp.
bool cas_through_full_index(const ScatterProblem& p) {
  return is_cas_update(p) && p.space.strides[kIndexOperand][0] != 0;
}

// A 2-D block whose rows pass the tensor's (a few rows reached through the
// index, where lanes_along_index gave a warp 4-8 lanes a row and the block 32
// or 64 rows) left most of its warps without a row: seed 508's float64 (4 x
// 1397985) through a full index, 4 rows in blocks of 32, one warp in 8 at
// work. The block's rows are cut to what the tensor needs, in whole warps,
// and its other row groups take the next column ranges (block_rows in
// scatter_params.h): the warps keep the planner's shape, the SM its threads.
// H100, NOTES 89: 508 314 -> 198 us (176 with the warp along the row above;
// PyTorch 220), a bool index_copy_ of rows of 2 (seed 127) 16.8 -> 9.7. Blocks
// of only the rows needed instead (32 threads: half the SM's threads at most)
// gained 1.03x; whole blocks along the row (16 lanes a row of 2-byte
// elements) lost an int16 index_copy_ 929 -> 1215 us.
void fold_block_rows(const IterationSpace& s, LaunchShape& shape, int& block_rows) {
  const int64_t warp_rows = std::max<int64_t>(1, 32 / shape.block[0]);
  const int64_t rows = ceil_div(ceil_div(s.sizes[0], shape.unroll), warp_rows) * warp_rows;
  const int64_t groups = shape.block[1] / rows;
  if (groups < 2) return;
  block_rows = int(rows);
  shape.block[1] = unsigned(rows * groups);
  shape.grid[0] = unsigned(ceil_div(s.sizes[1], int64_t(shape.block[0]) * groups));
  shape.grid[1] = 1;
}

// The owned walk's axis (templates/scatter_owned.cuh): the one dim where self
// moves only through the index, every other dim moving self, so that the
// units one thread takes along it are the only ones that reach its
// destinations; -1 where there is none, or the op has no owned update.
int owned_axis(const ScatterProblem& p) {
  if (p.op != kScatterAdd && p.op != kScatterMul && p.op != kScatterMax && p.op != kScatterMin) return -1;
  const IterationSpace& s = p.space;
  int axis = -1;
  for (int d = 0; d < s.ndim; ++d) {
    if (s.strides[kSelfOperand][d] != 0) continue;
    if (axis >= 0 || s.strides[kIndexOperand][d] == 0) return -1;
    axis = d;
  }
  return axis;
}

// Where the owned walk pays (H100, NOTES 91): its plain read-modify-writes
// of self against the atomics of the other walks. It wins where those are
// compare-and-swap loops (products, 8- and 16-bit max and min, 8- and 16-bit
// integer adds: 7 plans of seeds 100-843, 1.35x to 7.1x; bfloat16 products of
// 32 terms into 1M elements 2138 -> 299 us, PyTorch 1951), where its packs are
// wider than theirs (float64, int32 and int64 adds move one element an atomic,
// 16 bytes owned: 7 plans, 0.94x to 1.51x), and for 16-bit float adds whose
// linear walk has lanes that meet on one destination, combined and then
// added alone (seed 723's float16 index_add_ of 2 terms into each of 67M
// elements, 1054 -> 367 us, PyTorch 982). Other 16-bit float adds, and
// float32 and 32-bit integer adds (native reductions of their packs), ran as
// fast or faster with atomics: 20 16-bit plans 0.57x-1.37x, 0.98x in geomean.
// And only with owners to fill the GPU (a wave of threads: with fewer, each
// thread's terms in turn left the SMs idle, 0.04x at 2048 owners of 4381
// terms) whose neighbours lie side by side in self and src (a thread's
// destination a sector away from the next lane's ran 0.16-0.66x), or, for
// adds through one index, a short dense row apart (below).
bool owned_walk_pays(const ScatterProblem& p, const LaunchTuning& tuning, const DeviceInfo& device) {
  // Owners before packing first: packs only make them fewer, and most calls (small ones above all) stop here
  // without copying the problem twice.
  const int64_t wave = int64_t(device.sm_count) * device.max_threads_per_sm;
  if (p.space.ndim < 2 || p.space.numel() / p.space.sizes[owned_axis(p)] < wave) return false;
  ScatterProblem owned = p, atomic = p;
  int owned_vec = 1, atomic_vec = 1;
  choose_vector(owned, tuning.vector_bytes, true, owned_vec);
  choose_vector(atomic, tuning.vector_bytes, false, atomic_vec);
  const IterationSpace& s = owned.space;
  const int axis = owned_axis(owned);
  if (axis < 0 || s.ndim < 2) return false;
  const int inner = axis == s.ndim - 1 ? s.ndim - 2 : s.ndim - 1;  // the owners' innermost dim
  const int64_t src_step = magnitude(s.strides[kSrcOperand][inner]);
  const bool side_by_side =
      magnitude(s.strides[kSelfOperand][inner]) == owned_vec && (src_step == 0 || src_step == owned_vec);
  // Adds whose owners lie a short dense row apart (the axis innermost and dense in self and in src), through one
  // index for all of them (index_add_'s; a scatter_add_ whose index is expanded along every owner dim moves the
  // same way, not measured apart): a warp's owners still read and write whole rows, its index loads are one
  // address, and a thread's terms are few. There the owned walk's plain updates beat the atomics whatever the
  // element (NOTES 109: 65 index_add_ plans of seeds 100-4399 1.39x faster in geomean, 55 of seeds 4400-6399
  // 1.36x; below PyTorch 30 -> 0). With self rows past 8 bytes or src rows past 32 (or as many terms from an
  // expanded src), each thread's chain of dependent updates grew and it lost, down to 0.44x; through a full
  // index (each owner its own destinations) it won on seeds 100-4399 (25 plans 1.23x) and lost on later ones
  // (20 plans 0.98x, down to 0.41x). Products, max and min were measured only through a full index.
  const bool short_rows = p.axis_size * p.element_bytes <= 8 && s.sizes[axis] * p.element_bytes <= 32;
  // src's rows dense along the axis and next to each other, or one src row (expanded) for every owner
  const bool src_rows = src_step == 0 || (src_step == s.sizes[axis] && magnitude(s.strides[kSrcOperand][axis]) == 1);
  const bool dense_rows =
      magnitude(p.axis_stride) == 1 && magnitude(s.strides[kSelfOperand][inner]) == p.axis_size && src_rows;
  const bool rows_apart = p.op == kScatterAdd && index_dims(s) == 1 && owned_vec == 1 && short_rows && dense_rows;
  const int64_t owners = s.numel() / s.sizes[axis];
  if (!(side_by_side || rows_apart) || owners < wave) return false;
  if (!side_by_side) return true;
  const bool narrow_float_add = p.op == kScatterAdd && (p.element == kElemFloat16 || p.element == kElemBFloat16);
  const bool lone_meeting_adds = narrow_float_add && atomic.space.ndim != 2 && lanes_may_share(atomic.space);
  return is_cas_pack(p) || owned_vec > atomic_vec || lone_meeting_adds;
}

bool owned_walk(const ScatterProblem& p, const LaunchTuning& tuning, const DeviceInfo& device) {
  const int mode = g_owned_walk_mode.load(std::memory_order_relaxed);
  if (mode == 0 || owned_axis(p) < 0) return false;
  return mode == 1 || owned_walk_pays(p, tuning, device);
}

// The owned walk's launch: axis first (the kernel's dim 0), each thread
// taking `unroll` owners a block apart, no fewer owners a thread than leave
// the grid a wave.
LaunchShape owned_launch_shape(ScatterProblem& p, int axis, int vec, const LaunchTuning& tuning,
                               const DeviceInfo& device) {
  IterationSpace& s = p.space;
  terms_axis_first(s, axis);
  const int64_t owners = s.numel() / s.sizes[0];
  LaunchShape shape;
  shape.dims = s.ndim <= kSpecializedDims ? s.ndim : 0;
  shape.unroll = tuning.unroll;
  // 16-byte packs of adds (int32, int64, float64): one owner a thread. At 2-4
  // they held 59-96 registers; at 1, 40-48, and the 45 such plans of seeds
  // 100-903 ran 1.05x faster in geomean, none more than 1% slower (seed 355's
  // float64 index_add_ 167.3 -> 143.4 us; NOTES 92). Compare-and-swap packs
  // and 16-bit adds lost at 1 (seed 723's float16 367 -> 441, NOTES 91).
  if (tuning.adapt_unroll && vec * p.element_bytes == 16 && !is_cas_pack(p)) shape.unroll = 1;
  const int64_t wave = int64_t(device.sm_count) * device.max_threads_per_sm;
  while (tuning.adapt_unroll && shape.unroll > 1 && owners / shape.unroll < wave) shape.unroll /= 2;
  shape.block[0] = unsigned(tuning.threads);
  shape.grid[0] = grid_blocks(owners, int64_t(tuning.threads) * shape.unroll, tuning.threads, device, tuning.waves);
  return shape;
}

}  // namespace

int64_t small_index_threshold() { return g_small_index_threshold.load(std::memory_order_relaxed); }
void set_small_index_threshold(int64_t t) { g_small_index_threshold = t; }
int owned_walk_mode() { return g_owned_walk_mode.load(std::memory_order_relaxed); }
void set_owned_walk_mode(int mode) { g_owned_walk_mode = mode; }
void set_cas_unroll(int unroll) { g_cas_unroll = unroll; }
int set_rows_always_meet(int mode) { return g_rows_always_meet.exchange(mode); }
int set_prepare_order(int mode) { return g_prepare_order.exchange(mode); }
int set_scatter_waves(int waves) { return g_scatter_waves.exchange(waves); }

bool plan_scatter(ScatterProblem p, const DeviceInfo& device, IndexErrorSlot* error_slot, LaunchPlan& plan) {
  if (p.space.numel() == 0) return false;
  p.space.operands = kScatterOperands;
  if (p.op == kScatterFill && plan_fill_marked(p, device, error_slot, plan)) return true;
  // src dense along another dim than self: through shared memory (scatter_tile_plan.h). Copies at once; adds
  // where neither the owned walk nor private copies take them (below), which were measured against the walk.
  IndexTileChoice tile;
  const bool tiled = index_tile_choice(p, device, tile);
  auto plan_tiles = [&] {
    plan.tunable = true;
    plan.tuning = resolve_tuning(scatter_point(tile.problem), device, LaunchTuning());
    plan_index_tiles(tile, fits_32bit(tile.problem), error_slot, device, plan);
    return true;
  };
  if (tiled && p.op == kScatterCopy) return plan_tiles();
  // The identity stores and counts before a reduction read no source: where
  // the indexed dim is self's innermost, src's strides go, so that they
  // neither block a collapse nor pick the walk's order. A float64
  // include_self=False sum from a transposed src walked the index 53 KB a
  // lane in src's order: its stores took 66 us against PyTorch's 18-us fill
  // (seed 1856). The indexed dim then goes innermost where prepare_axis_first
  // says (its lanes storing or counting within a row of self), and otherwise
  // the index, read at every unit, orders the dims self leaves open. With the
  // index's order alone: 35 such sweep plans of seeds 100-1900 1.02x in
  // geomean; with the indexed dim outermost in self (82 plans) 1.00x, down to
  // 0.60x: each lane then stores into another row either way, and src's
  // order stays there (H100, NOTES 106).
  const bool prepare_by_index = p.op == kScatterPrepare && g_prepare_order.load(std::memory_order_relaxed) != 0 &&
                                axis_innermost(p);
  if (prepare_by_index)
    for (int d = 0; d < p.space.ndim; ++d) p.space.strides[kSrcOperand][d] = 0;
  const bool over_self = p.op == kScatterMeanFinish || p.op == kScatterMeanReset;
  const bool linear_pass = over_self || p.op == kScatterDetKeys || p.op == kScatterDetReduce;
  if (over_self && mean_memory_order() != 0) {
    // The mean's passes over self walk it in memory order, where its counts
    // lie alike (counts_strides): a transposed float32 self (16x179528) read
    // 64 bytes a lane apart in C order, 37 us against PyTorch's 9-us divide.
    const int priority[] = {kSelfOperand, kCountsOperand};
    order_by_memory(p.space, priority, 2);
  }
  if (!linear_pass) {  // walk self as it lies in memory, then src (the linear passes keep the C order they sort by)
    // An index that stays the same along a dim where self is dense
    // (index_add_'s into a transposed self, an expanded one) writes runs of
    // self: along the dims it varies, self's stride counts as the widest for
    // the order, so that the runs go inside and the writes land side by side.
    // Otherwise src's layout decides where self's does not.
    // The dims the index varies along count instead at the axis's stride,
    // where their writes land, when
    // - the run is short (under 128 bytes: int32 pairs of a transposed self):
    //   slices of 8 bytes a whole self apart wrote each sector once per index
    //   (index_fill_ 0.51x PyTorch, NOTES 64); index_fill_'s index dims get a
    //   stride to order by even under a run of one, having no source;
    // - or self spans more than half the L2: outermost, each index position
    //   wrote its rows across all of self at once, and sectors left partly
    //   written went out to DRAM and came back (index_fill_ float64
    //   (16x4x8192x23), 19785 indices along dim 2: 196 MB written to DRAM for
    //   a 96 MB self, 202 us; in self's order 93 us, PyTorch 109; 51 plans of
    //   seeds 40-99 changed, 1.12x in geomean, NOTES 72). Below that the rows
    //   stay in L2 and the widest order measured as fast or faster.
    IterationSpace key = p.space;
    const int64_t run = self_run_elements(key);
    const bool widest = run * p.element_bytes >= 128 && !device.past_half_l2((p.self_hi - p.self_lo) * p.element_bytes);
    const bool fill = p.op == kScatterFill;
    const bool axis_first = prepare_by_index && prepare_axis_first(p);
    for (int d = 0; d < key.ndim; ++d)
      if (key.strides[kSelfOperand][d] == 0 && key.strides[kIndexOperand][d] != 0 && (run > 1 || fill))
        key.strides[kSelfOperand][d] = widest ? int64_t(1) << 62 : std::max<int64_t>(1, magnitude(p.axis_stride));
      else if (axis_first && key.strides[kSelfOperand][d] == 0 && key.sizes[d] > 1)
        key.strides[kSelfOperand][d] = std::max<int64_t>(1, magnitude(p.axis_stride));
    const int priority[] = {kSelfOperand, prepare_by_index ? kIndexOperand : kSrcOperand};
    int order[kMaxDims + 16];
    memory_order(key, priority, 2, order);
    prefer_fewest_sectors(p, order);
    permute_dims(p.space, order);
  }
  collapse(p.space);
  if (!linear_pass && index_goes_inner(p, device)) {
    const int index_inside[] = {1, 0};
    permute_dims(p.space, index_inside);
  }
  plan.tunable = !linear_pass;
  plan.tuning = ResolvedTuning();
  if (!linear_pass) plan.tuning = resolve_tuning(scatter_point(p), device, LaunchTuning());
  const LaunchTuning& tuning = plan.tuning.config;
  // Adds that keep the mean's counts too go through the atomic walks, which count (count_units).
  const bool counted = p.op == kScatterAdd && p.counts;
  if (!linear_pass && p.space.ndim <= kMaxDims) {
    const OwnedRowsLayout rows = owned_rows_layout(p);
    if (rows.applies) {
      plan_owned_rows(p, rows, error_slot, device, plan);
      return true;
    }
  }
  const bool owned = !linear_pass && !counted && owned_walk(p, tuning, device);
  if (!linear_pass && !owned && !counted && p.space.ndim <= kMaxDims) {
    const PrivateAddLayout copies = private_add_layout(p, device);
    if (copies.applies) {
      plan_private_add(p, copies, error_slot, plan);
      return true;
    }
  }
  if (tiled && !owned && !counted) return plan_tiles();
  int vec = 1;
  choose_vector(p, tuning.vector_bytes, owned, vec);
  // Ragged packs where no uniform pack fits: a step of their own, after the owned walk's choice, which weighs
  // choose_vector's packs against the atomic walk's (owned_walk_pays) and was measured with those.
  if (vec == 1 && !owned && !linear_pass) vec = ragged_packs(p, tuning.vector_bytes);
  if (p.space.ndim > kMaxDims)
    throw value_error("the iteration space has " + std::to_string(p.space.ndim) + " dimensions that do not collapse; "
                      "jitops supports at most " + std::to_string(kMaxDims));
  const IterationSpace& s = p.space;
  // Few indices varying along the rows of a 2-D layout: one block row walks
  // them all, loading each index once (PyTorch's indexFuncSmallIndex).
  // It pays only when the slice alone gives every SM two blocks; below that
  // the large-index regime spreads the indices over the grid too.
  bool small_index = s.ndim == 2 && !linear_pass && !owned && s.strides[kIndexOperand][0] != 0 &&
                     s.strides[kIndexOperand][1] == 0 && s.sizes[0] <= small_index_threshold();
  // Adds in the 2-D layout. Index along the inner dim only: a thread's units
  // never share a destination, and unroll 1 ran 10% faster (index_add dim 1
  // of 4096 x 4096). A full index (varying along both dims) keeps the tuned
  // unroll: its rows' loads in flight together took int32 through a full
  // int64 index into a transposed self 677 -> 571 us (PyTorch 600, seed 44),
  // int64 sorted along dim 2 200 -> 85 (PyTorch 125, seed 46; 3 of 14 such
  // cases on seeds 40-69 lost 4-7%, NOTES 71). Index along the rows keeps it
  // too. Unroll 8 there, where destinations averaged 64 terms or more (so that
  // a thread's units merge: every index equal 1307 -> 692 us, NOTES 69), ran
  // 1.16x slower in geomean over the 202 sweep plans of seeds 100-916 it took
  // (random values 1.24x, sorted 1.34x; 45 below PyTorch's time against 9):
  // only 8 hot values gained (1.17x), which the planner cannot see; unroll 2
  // and 1 ran 1.11x and 0.97x of 4 (NOTES 95).
  LaunchTuning tune = tuning;
  // Plain stores (index_copy_, index_fill_) of elements of 2 bytes or more:
  // a grid over all the units, not a grid-stride loop over 16 waves of
  // blocks, whose blocks in flight wrote a grid apart. bfloat16 fills of a
  // step-3 slice (every store a third of a sector): 234.7 us capped, 191.8
  // uncapped, PyTorch 193.2 (seed 918). Over the 416 sweep plans of seeds
  // 100-918 the cap binds (H100, NOTES 96): for 2 bytes and up the same
  // geomean (0.998x of the capped time), 14 below PyTorch's time against 31
  // and none that fell below it; single bytes ran slower uncapped (copies
  // 1.03x, fills 1.05x in geomean), so they keep the cap.
  if (tune.adapt_unroll && (p.op == kScatterCopy || p.op == kScatterFill) && p.element_bytes >= 2)
    tune.waves = kUncappedWaves;
  // Adds, reductions and their identity stores and counts: uncapped too,
  // except in the 2-D walk. Capped, resident blocks loop in groups a grid
  // apart, and what a later group reads again has left L2 (seed 1863's int64
  // index_add_ from a transposed src, 632 -> 425 us, PyTorch 475). Over 181
  // sweep plans the cap binds (H100, NOTES 108), the 103 linear walks ran
  // 1.02x faster in geomean where fitted (seeds 100-2399, 59 plans) and 1.08x
  // after (2400-4399, 44; sorted products into one column up to 2.75x), 7
  // slower by 3% or more; the 2-D walks lost (0.95-0.97x).
  const int forced_waves = g_scatter_waves.load(std::memory_order_relaxed);
  if (tune.adapt_unroll && forced_waves > 0)
    tune.waves = forced_waves;
  else if (tune.adapt_unroll && s.ndim != 2 && p.op != kScatterCopy && p.op != kScatterFill)
    tune.waves = kUncappedWaves;
  if (tuning.adapt_unroll && s.ndim == 2 && p.op == kScatterAdd && s.strides[kIndexOperand][0] == 0) tune.unroll = 1;
  // Every op of the 2-D walk: no more units a thread than leave the grid a
  // wave of threads. 289477 int32 rows of 3 into 3322 (87 terms a
  // destination, none merging) took 19.6 us at unroll 8 (half the SMs'
  // threads), 16.8 at 4, 15.7 at 2 (PyTorch 19.2; seed 32); index_fill_ of 6
  // rows at 42950 random columns, 168 blocks looping over the rows at unroll
  // 4, 10.3 us against PyTorch's 9.0 (seed 36).
  if (tuning.adapt_unroll && s.ndim == 2) {
    const int64_t wave = int64_t(device.sm_count) * device.max_threads_per_sm;
    while (tune.unroll > 1 && s.numel() / tune.unroll < wave) tune.unroll /= 2;
  }
  // Compare-and-swap updates (products; max and min of 8- and 16-bit
  // elements) with many terms a destination, and the identity stores before
  // them: each thread takes 8 units in turn, so that fewer contend at once. A
  // CAS loses to every other one in flight on its address; a float16 product
  // of 109117 terms into 1504 (one unit a thread, all in flight) made 4.7M CAS
  // attempts, 886 us against PyTorch's 240 (1.17M and 242 us at 8 a thread;
  // NOTES 64). Max and min leave their loop once the value stands, so they
  // contend less: under 32 terms a destination they take one unit a thread
  // (a float16 amin of 17 sorted terms a destination 998 -> 590 us, PyTorch
  // 882; 41 max / min cases of seeds 40-69 1.36x faster in geomean, NOTES
  // 71). Products keep 8 from 8 terms on: at one unit a thread, products
  // into hot repeated destinations ran up to 2.3x slower. The updates
  // themselves take 4 (the identity stores keep 8): at 8 a thread float64
  // products need 91-111 registers, and over 99 sweep plans of seeds 140-199
  // 4 ran 1.13x faster in geomean (64 faster by 3% or more, 18 slower; below
  // PyTorch 5 -> 2): random and sorted destinations gained (seed 1848's
  // float64 into (180177, 8), 608 -> 351 us against PyTorch's 429), a few
  // hot repeated ones lost up to 2.2x while still 3-17x PyTorch's (NOTES 105).
  // float32 and float64 max and min (a read, then a reduction where the
  // value changes) keep one unit a thread under 32 terms a destination, and
  // take the default from there: 118 such cases of seeds 100-710 1.06x
  // faster than with 8 (float32 amax of rows of 16, 35 terms a destination:
  // 95.6 -> 57.1 us, PyTorch 81.7), where the default under 32 terms lost up
  // to 23% (a random float32 amin into 94M elements 676 -> 873 us; NOTES 85).
  const bool extremum = p.op == kScatterMax || p.op == kScatterMin;
  if (tuning.adapt_unroll && (is_cas_update(p) || is_float_extremum(p) || p.op == kScatterPrepare)) {
    const int64_t span = std::max<int64_t>(1, p.self_hi - p.self_lo + 1);
    const bool many_terms = s.numel() * vec >= (extremum ? 32 : 8) * span;  // terms a destination: elements
    if (many_terms && !is_float_extremum(p)) {
      const int forced = g_cas_unroll.load(std::memory_order_relaxed);
      tune.unroll = forced > 0 ? forced : p.op == kScatterPrepare ? 8 : 4;
      tune.adapt_unroll = false;
    } else if (!many_terms && extremum) {
      tune.unroll = 1;
      tune.adapt_unroll = false;
    }
  }
  // Destinations reached only through the index along a row (scatter_add_
  // along dim 1 of a 2-D self, index_add_ along the inner dim): with hot
  // indices, a row's blocks hit its few hot elements, and x-first blocks in
  // flight spanned 8 rows of 77 (bfloat16 into 8 hot columns a row: 760 us
  // against PyTorch's 349; NOTES 64): the blocks go row-major. Only where the
  // rows' destinations fit in L2 several times over; where a thread's rows
  // would not, it takes one row, so that x-first blocks in flight write one
  // row's: random writes into 8 rows of 9 MB (index_copy_, complex64) took
  // 473 us with all rows in flight, 332 with 4, 284 a row a thread (PyTorch
  // 277, row by row).
  const bool rows_through_index = s.ndim == 2 && !linear_pass && !owned && s.strides[kSelfOperand][1] == 0 &&
                                  s.strides[kSelfOperand][0] != 0 && s.strides[kIndexOperand][1] != 0;
  const double row_footprint =
      double(p.axis_size) * double(std::max<int64_t>(1, magnitude(p.axis_stride))) * p.element_bytes;
  if (rows_through_index && tune.adapt_unroll && row_footprint * tune.unroll > double(kRowsFootprint)) {
    tune.unroll = 1;
    tune.adapt_unroll = false;
  }
  unsigned lanes_x = rows_through_index ? lanes_along_index(p) : 1024;
  if (rows_through_index && lanes_x < 32 && (cas_through_full_index(p) || few_rows_full_index(p, lanes_x, tune, device)))
    lanes_x = 32;
  LaunchShape shape;
  if (owned) shape = owned_launch_shape(p, owned_axis(p), vec, tuning, device);
  if (small_index) {
    shape = choose_launch_shape(s, device, tune, true);
    shape.unroll = int(std::min<int64_t>(s.sizes[0], 4));
    small_index = shape.grid[0] >= 2u * unsigned(device.sm_count);
  }
  if (!small_index && !owned) {
    shape = choose_launch_shape(s, device, tune, false, lanes_x);
    if (!linear_pass && (p.op == kScatterAdd || p.op == kScatterCopy)) fit_block_columns(s, tune.threads, shape);
  }
  const int bits = fits_32bit(p) ? 32 : 64;
  const bool rows_fit = row_footprint * double(s.sizes[0]) <= double(kRowsFootprint);
  p.rows_first = rows_through_index && shape.dims == 2 && !small_index && shape.grid[1] > 1 && rows_fit;
  // Where the rows' destinations do not fit, x-first blocks take one group of
  // rows at a time, and the grid's rows are all of them: capped at the waves,
  // each thread looped over rows a grid apart, and the blocks in flight drifted
  // over all their rows (float64 into 64 rows of 5.4 MB through a full index:
  // 8 rows in flight, 1335 us against PyTorch's 865; a row at a time 679 us,
  // NOTES 68).
  if (rows_through_index && shape.dims == 2 && !small_index && !rows_fit) {
    const int64_t rows_a_block = int64_t(shape.block[1]) * shape.unroll;
    shape.grid[1] = unsigned(std::min<int64_t>(65535, (s.sizes[0] + rows_a_block - 1) / rows_a_block));
  }
  if (shape.dims == 2 && !small_index && !linear_pass && !owned) fold_block_rows(s, shape, p.block_rows);

  using F = ScatterSpecFields;
  // The passes over self take up to 4 elements a thread, their counts loaded
  // together before their self elements (one at a time, each self element
  // waited on its count), where the grid still fills the resident threads
  // once: over 120 sweep means above 1 MB of seeds 100-1900 1.006x in
  // geomean, up to 1.09x (seed 1858's bfloat16 finish over 6.2M elements
  // 27.4 -> 17.7 us), none 3% slower; 30 smaller ones lost 0.3 us at 4
  // (H100, NOTES 107).
  const int asked = mean_finish_unroll();
  int pass_unroll = !over_self ? 1 : asked >= 4 ? 4 : asked >= 2 ? 2 : 1;
  while (pass_unroll > 1 && s.numel() / pass_unroll < int64_t(device.sm_count) * device.max_threads_per_sm)
    pass_unroll /= 2;
  plan.spec = scatter_spec(p.element, p.index_bytes, shape.dims, bits, counted ? int(kScatterAddCounted) : p.op, vec,
                           linear_pass ? pass_unroll : shape.unroll, tuning.threads);
  plan.spec.fields[F::kAlpha] = p.has_alpha;
  plan.spec.fields[F::kRunsInLanes] =
      owned ? 0 : shape.dims == 2 ? lane_runs_2d(p, shape, device) : lanes_may_share(s);
  plan.spec.fields[F::kOwned] = owned;
  plan.spec.fields[F::kPeel] = p.peel_len > 0;
  plan.regime = owned ? "owned" : shape.dims == 2 && !linear_pass ? (small_index ? "small-index" : "large-index") : nullptr;
  fill_for_dims(p, shape.dims, bits, error_slot, plan);
  std::copy(shape.grid, shape.grid + 3, plan.grid);
  std::copy(shape.block, shape.block + 3, plan.block);
  if (linear_pass) {
    // a grid-stride loop over the units, whatever the dims
    plan.block[0] = unsigned(tuning.threads);
    plan.block[1] = 1;
    plan.grid[0] = grid_blocks(s.numel(), int64_t(tuning.threads) * pass_unroll, tuning.threads, device, tuning.waves);
    plan.grid[1] = 1;
  }
  return true;
}

size_t sort_length(int64_t units) {
  size_t n = 1;
  while (int64_t(n) < units) n <<= 1;
  return n;
}

void plan_deterministic_sum(ScatterProblem p, bool mean, unsigned long long* keys, const DeviceInfo& device,
                            IndexErrorSlot* error_slot, std::vector<LaunchPlan>& plans) {
  const int64_t units = p.space.numel();
  if (units == 0) return;
  p.keys = keys;
  p.mean = mean;
  plans.emplace_back();
  p.op = kScatterDetKeys;
  plan_scatter(p, device, error_slot, plans.back());
  const uint32_t n = uint32_t(sort_length(units));
  KernelSpec sort_spec;
  sort_spec.family = KernelFamily::Sort;
  sort_spec.fields[SortSpecFields::kMaxThreads] = 256;
  const unsigned blocks = grid_blocks(n, 256, 256, device, 4);
  for (uint32_t k = 2; k <= n && n > 1; k <<= 1) {
    for (uint32_t j = k >> 1; j > 0; j >>= 1) {
      plans.emplace_back();
      LaunchPlan& plan = plans.back();
      plan.spec = sort_spec;
      plan.block[0] = 256;
      plan.grid[0] = blocks;
      SortParams sp{keys, n, j, k, 0};
      plan.set_params(sp);
    }
  }
  plans.emplace_back();
  p.op = kScatterDetReduce;
  plan_scatter(p, device, error_slot, plans.back());
}

}  // namespace jitops
