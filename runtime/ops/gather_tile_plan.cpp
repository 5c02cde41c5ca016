#include "runtime/ops/gather_tile_plan.h"

#include <algorithm>
#include <cmath>

#include "jit/gather_source.h"
#include "jitops/gather_tile_params.h"
#include "runtime/int_math.h"
#include "runtime/ops/elementwise_tile_plan.h"

namespace jitops {
namespace {

// Outputs under this many units stay on the strided walk: its one pass over
// a few thousand units beat the tile's loads, barrier and stores (complex64
// (32, 2, 256) from a transposed x: 5.3 against 6.2 us tiled; uint32 of 2688
// units 4.8 against 5.5), where 69k units gained (uint16, 5.6 -> 5.1 us).
constexpr int64_t kMinTiledUnits = int64_t(1) << 15;
// Where the index varies inside a tile, every element loads its index value
// too: outputs of 35K-72K units lost (float16 of 72K: 4.6 -> 5.4 us, uint16
// of 35K: 5.0 -> 5.3), 482K gained (uint32 from a transposed (111, 2048)
// along axis 1: 7.2 -> 6.4).
constexpr int64_t kMinIndexEachTiledUnits = int64_t(1) << 18;
constexpr int kSectorBytes = 32;  // what a read moves from L2 or DRAM
constexpr int64_t kMinShortTiledUnits = int64_t(1) << 17;  // a short b's tile (short_dense_b_pays)
// The indexed axis as the tile's b (dense_axis_dim): at least this many index values along it, and its lanes
// reading at most this share of a sector each.
constexpr int64_t kMinAxisTileExtent = 8;
constexpr double kAxisTileSectorShare = 0.5;

template <int Dims, int Bits>
void fill_params(const GatherProblem& p, int dim_b, int tile_a, int tile_b, IndexErrorSlot* slot, LaunchPlan& plan) {
  GatherTileParams<Dims, Bits> q{};
  fill_tile_geometry(p.space, dim_b, tile_a, tile_b, kGatherTileOperands, q.tiles);
  q.tiles.data[kTileOut] = p.out;
  q.tiles.data[kTileX] = const_cast<void*>(p.x);
  q.tiles.data[kTileIndex] = const_cast<void*>(p.index);
  q.error = slot;
  q.axis_size = p.axis_size;
  q.axis_stride = typename OffsetTypes<Bits>::Stride(p.axis_stride);
  q.op_code = p.op_code;
  plan.set_params(q);
}

template <int Bits>
void fill_params_for_dims(int dims, const GatherProblem& p, int dim_b, int tile_a, int tile_b, IndexErrorSlot* slot,
                          LaunchPlan& plan) {
  switch (dims) {
    case 2: return fill_params<2, Bits>(p, dim_b, tile_a, tile_b, slot, plan);
    case 3: return fill_params<3, Bits>(p, dim_b, tile_a, tile_b, slot, plan);
    default: return fill_params<kMaxDims, Bits>(p, dim_b, tile_a, tile_b, slot, plan);
  }
}

// Where each element loads its own index value, whether the strided walk reads x's sectors from a cache
// rather than DRAM, so that the tile's loads, barrier and shared-memory round trip no longer pay (NOTES 82:
// of 129 index-each tile plans of seeds 100-700, walk against tile 0.49x to 2.17x). (1) An index constant
// along b (index_select, take): the rows of b that share one of x's 32-byte sectors read the same x row
// within the units one block of the walk covers (threads x unroll), which re-reads the sector from L1 (32
// plans 1.12x in geomean, the least 0.86x). torch.gather's index varies along b, the rows read other rows
// of x: 8 such plans 0.94x, they keep the tiles. (2) Units of a byte with x's touched bytes within three
// quarters of the L2: the walk's sectors come from the L2, where a byte tile moves four units a thread
// through shared memory (an int8 gather from a transposed x, its index 180 MB: 259 -> 119 us; 10 more
// plans 1.20x, the least 0.90x of 6.3 us). Wider units from the L2 part both ways (a bfloat16 take 1.45x,
// an int16 gather 0.49x): they keep the tiles.
bool walk_reads_x_from_cache(const GatherProblem& p, int b, const DeviceInfo& device, const LaunchTuning& tuning) {
  const IterationSpace& s = p.space;
  const int64_t rows_a_sector = std::max(1, kSectorBytes / p.element_bytes);
  const int64_t block_units = int64_t(tuning.threads) * std::max(1, tuning.unroll);
  if (s.strides[kIndex][b] == 0 && magnitude(s.strides[kOut][b]) <= block_units / rows_a_sector) return true;
  if (p.element_bytes > 1) return false;
  // x's touched bytes: its extent along the dims it moves along, times the rows the index can name.
  const int64_t limit = device.l2_bytes / 4 * 3;
  int64_t touched = p.element_bytes, values = 1;
  for (int d = 0; d < s.ndim; ++d) {
    if (s.strides[kX][d] != 0) touched *= s.sizes[d];
    else if (s.strides[kIndex][d] != 0) values = std::min(values * s.sizes[d], p.axis_size);
    if (touched > limit) return false;
  }
  return touched <= limit / std::max<int64_t>(1, std::min(values, p.axis_size));
}

// The indexed axis as b: the out dim the index varies along (x does not move along it but through the
// index, |axis_stride| a value), where x is denser along the axis than along a and any dim it moves along
// (x stored with the indexed dim innermost: a (K, C) index_select from x stored (C, N), or seed 912's gather
// of an index expanded along the output's inner dim). The walk's lanes along a read a sector each; a tile's
// lanes along the axis read the values' rows of x, which share sectors where the values lie close. Taken
// where a row along the axis spans more than two sectors and random values would share them (at most
// kAxisTileSectorShare distinct sectors a lane). Of the 193 sweep plans of seeds 100-916 that could take it,
// 132 timed (H100, NOTES 95): the 51 this picks ran 1.53x faster in geomean (912's float64 gather 237 -> 67 us,
// PyTorch 198; an index_select of 30 float16 rows 628 -> 81), 5 slower by 3-9%; rows of 64 bytes or less
// lost up to 2.3x (the walk's neighbouring lanes read neighbouring rows), random values over long rows up to
// 2.2x (a sector a lane either way). -1: none.
int dense_axis_dim(const GatherProblem& p, int64_t x_step_a, int moving_b, const LaunchTuning& tuning) {
  const IterationSpace& s = p.space;
  const int a = s.ndim - 1;
  const int64_t step = magnitude(p.axis_stride);
  if (step == 0 || step >= x_step_a || (moving_b >= 0 && magnitude(s.strides[kX][moving_b]) <= step)) return -1;
  int b = -1;
  for (int d = a - 1; d >= 0; --d)
    if (s.strides[kX][d] == 0 && s.strides[kIndex][d] != 0 && s.sizes[d] >= kMinAxisTileExtent &&
        (b < 0 || magnitude(s.strides[kIndex][d]) < magnitude(s.strides[kIndex][b])))
      b = d;
  if (b < 0) return -1;
  // A row of x along the axis within two sectors: the walk's neighbouring lanes read neighbouring rows, which
  // share sectors and DRAM bursts (a float32 gather from a (2097152, 16) x, 282 us walked, 495 tiled).
  const int64_t row_bytes = p.axis_size * step * p.element_bytes;
  if (row_bytes <= 2 * kSectorBytes) return -1;
  // Random values over the axis's sectors: the distinct sectors a tile row's lanes read, against one a lane.
  int tile_a = 0, tile_b = 0;
  tile_edges(s.sizes[a], s.sizes[b], tuning.threads, tile_a, tile_b);
  const double lanes = double(std::min<int64_t>(tile_b, s.sizes[b]));
  const double sectors = std::max(1.0, double(row_bytes) / kSectorBytes);
  const double distinct = sectors * (1.0 - std::pow(1.0 - 1.0 / sectors, lanes));
  return distinct <= kAxisTileSectorShare * lanes ? b : -1;
}

// A dim of x under kMinTileExtent but dense (stride 1), where x's step along a puts each of the walk's
// lanes on a sector of its own: x stored (K, 3) and gathered with K innermost in the output. A tile of b's
// few values reads them side by side, a sector for several units. Of the 138 sweep plans of seeds 100-1900
// that tiles of any such b change (H100, NOTES 101), tiles ran 1.19x faster in geomean (seed 1819's complex64
// index_select 403 -> 233 us, PyTorch 332; a uint64 index_select 2940 -> 569) and lost where the output is
// small (5-10 us calls, 3-6%), the block under two warps (a uint64 of 16 threads, 40 -> 55 us) or the
// tile's edges, powers of two, under half filled (an int32 take, 5 of 8 by 76 of 128: 28 -> 105 us). Without
// those, 104 plans 1.30x; 2 below 0.97x PyTorch (14 before), both hot values along the indexed axis, whose
// sectors the walk's lanes share (an int64 take 100 -> 122 us, PyTorch 113).
bool short_dense_b_pays(const GatherProblem& p, int b, int64_t x_step_a, const LaunchTuning& tuning) {
  const IterationSpace& s = p.space;
  const int a = s.ndim - 1;
  if (s.sizes[b] < 2 || magnitude(s.strides[kX][b]) != 1 || x_step_a * p.element_bytes < kSectorBytes ||
      s.sizes[b] * p.element_bytes < 16 || s.numel() < kMinShortTiledUnits)
    return false;
  int tile_a = 0, tile_b = 0;
  tile_edges(s.sizes[a], s.sizes[b], tuning.threads, tile_a, tile_b);
  const double filled = double(s.sizes[a]) / double(ceil_div(s.sizes[a], tile_a) * tile_a) *
                        double(s.sizes[b]) / double(ceil_div(s.sizes[b], tile_b) * tile_b);
  return tile_threads(tuning.threads, tile_a, tile_b) >= 64 && filled >= 0.5;
}

}  // namespace

GatherTileChoice gather_tile_choice(const GatherProblem& p, const DeviceInfo& device, const LaunchTuning& tuning) {
  static_assert(int(kTileOut) == int(kOut) && int(kTileX) == int(kX) && int(kTileIndex) == int(kIndex) &&
                    int(kTileIndexPosition) == int(kIndexPosition),
                "the tile params number their operands as the gather space does");
  const IterationSpace& s = p.space;
  const int a = s.ndim - 1;
  GatherTileChoice none;
  if (p.flat || s.ndim < 2 || s.sizes[a] < kMinTileExtent || s.numel() < kMinTiledUnits) return none;
  if (magnitude(s.strides[kOut][a]) != 1) return none;
  // x's step along a: its own stride where x moves along a (torch.gather's index moves too, within the
  // axis's few rows, see below), or (a the indexed dim) at least the axis's stride between two indices.
  // torch.gather's full index with x moving along a: not for units of a byte (their strided walk won 3 of
  // 4 cases: a channels_last int8 x along H 236.8 against 259.6 us tiled; 1.17x over the 25 others).
  const bool index_along_a = s.strides[kIndex][a] != 0;
  const int64_t x_step_a = s.strides[kX][a] != 0 ? magnitude(s.strides[kX][a]) : magnitude(p.axis_stride);
  if (x_step_a == 0 || !(index_along_a || s.strides[kX][a] != 0)) return none;
  if (index_along_a && s.strides[kX][a] != 0 && p.element_bytes < 2) return none;
  int b = -1;
  for (int d = a - 1; d >= 0; --d)
    if (s.strides[kX][d] != 0 && (b < 0 || magnitude(s.strides[kX][d]) < magnitude(s.strides[kX][b]))) b = d;
  const int axis_b = dense_axis_dim(p, x_step_a, b, tuning);
  if (axis_b >= 0) {
    if (s.numel() < kMinIndexEachTiledUnits || walk_reads_x_from_cache(p, axis_b, device, tuning)) return none;
    const bool staged = index_along_a && magnitude(s.strides[kIndex][a]) < magnitude(s.strides[kIndex][axis_b]);
    return GatherTileChoice{axis_b, true, staged};
  }
  if (b < 0 || (s.sizes[b] < kMinTileExtent && !short_dense_b_pays(p, b, x_step_a, tuning)) ||
      magnitude(s.strides[kX][b]) >= x_step_a)
    return none;
  // An index varying along b (torch.gather's) reads x along b at one row per
  // distinct value: a warp's 32 lanes touch min(axis, 32) rows' sectors for
  // 32 units, where the strided walk reads a sector a unit. Random values
  // over axis_size rows pay only where axis_size * unit < 32 bytes (int16
  // from an axis of 2: 61.6 -> 30.5 us; complex64 from 256: 181 -> 246).
  const bool index_along_b = s.strides[kIndex][b] != 0;
  if (index_along_b && p.axis_size * p.element_bytes >= 32) return none;
  const bool index_each = index_along_a || index_along_b;
  if (index_each && s.numel() < kMinIndexEachTiledUnits) return none;
  if (index_each && walk_reads_x_from_cache(p, b, device, tuning)) return none;
  // An index varying along both and denser along a (torch.gather's full index into a contiguous output):
  // loaded along b, each lane's value would sit in its own sector (a channels_last int8 x along H with an
  // int64 index: 236 -> 346 us); the block loads it along a into shared memory first.
  const bool index_staged = index_along_a && index_along_b &&
                            magnitude(s.strides[kIndex][a]) < magnitude(s.strides[kIndex][b]);
  return GatherTileChoice{b, index_each, index_staged};
}

void plan_gather_tiles(const GatherProblem& p, const GatherTileChoice& choice, bool offsets_fit_32_bits,
                       IndexErrorSlot* error_slot, const DeviceInfo& device, LaunchPlan& plan) {
  const IterationSpace& s = p.space;
  const int dim_b = choice.dim_b;
  const LaunchTuning& tuning = plan.tuning.config;
  int tile_a = 0, tile_b = 0;
  tile_edges(s.sizes[s.ndim - 1], s.sizes[dim_b], tuning.threads, tile_a, tile_b);
  const int block = tile_threads(tuning.threads, tile_a, tile_b);
  shrink_to_shared_memory(tile_a, tile_b, [&](int a, int b) {
    const int64_t index_bytes = choice.index_staged ? int64_t(a) * staged_tile_pitch(p.index_bytes, b) * p.index_bytes : 0;
    return int64_t(a) * staged_tile_pitch(p.element_bytes, b) * p.element_bytes + index_bytes;
  });
  const int threads = std::min(block, tile_a * tile_b);
  const int dims = s.ndim <= 3 ? s.ndim : kMaxDims;
  using F = GatherSpecFields;
  plan.spec.fields[F::kDims] = dims;
  plan.spec.fields[F::kUnroll] = 0;
  plan.spec.fields[F::kMaxThreads] = threads;
  plan.spec.fields[F::kTileA] = tile_a;
  plan.spec.fields[F::kTileB] = tile_b;
  plan.spec.fields[F::kTileIndexEach] = choice.index_staged ? 2 : choice.index_each ? 1 : 0;
  plan.block[0] = unsigned(threads);
  plan.block[1] = plan.block[2] = 1;
  plan.grid[0] = grid_blocks(tile_count(s, dim_b, tile_a, tile_b), 1, threads, device, tuning.waves);
  plan.grid[1] = plan.grid[2] = 1;
  plan.regime = choice.index_staged ? "tiled: x dense along another dim than the output, an index value per "
                                      "element, the index staged along the output's dim"
                : choice.index_each ? "tiled: x dense along another dim than the output, an index value per element"
                                    : "tiled: x dense along another dim than the output, staged through shared memory";
  if (offsets_fit_32_bits)
    fill_params_for_dims<32>(dims, p, dim_b, tile_a, tile_b, error_slot, plan);
  else
    fill_params_for_dims<64>(dims, p, dim_b, tile_a, tile_b, error_slot, plan);
}

}  // namespace jitops
