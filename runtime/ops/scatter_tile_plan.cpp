#include "runtime/ops/scatter_tile_plan.h"

#include <algorithm>
#include <atomic>

#include "jit/scatter_source.h"
#include "jitops/scatter_params.h"
#include "jitops/scatter_tile_params.h"
#include "runtime/int_math.h"
#include "runtime/op_codes.h"
#include "runtime/ops/elementwise_tile_plan.h"

namespace jitops {
namespace {

std::atomic<int> g_scatter_tiles{1};

// The adds that tiles take: index_add_'s of the elements with native atomics, as the walk adds lone units
// (16-bit floats through their aligned pair, PyTorch's FastAtomicAdd). On an H200 (NOTES 116), 101 index_add_
// plans of float32, float64, int32 and int64 from seeds 100-999 and 7000-7899 ran 1.47x faster in geomean
// through tiles than on the walk (1.47x with one index value a tile, 1.47x with one a row; one slower,
// 0.77x, sorted float32 rows of 3), below PyTorch's time 6 -> 0; 94 of float16 and bfloat16 1.59x (3
// slower by 3% or more, the least 0.91x), below PyTorch 4 -> 0. scatter_add_'s and scatter_reduce_'s
// expanded rows through the same layouts (a 1-D index in effect, the 2-D walk's rows in flight against the
// tiles) lost: 99 plans 0.91x, down to 0.57x (sorted int64 rows of 16). They keep their walks, and 8- and
// 16-bit integers their compare-and-swap packs.
bool tiled_add(const ScatterProblem& p) {
  const bool native = p.element == kElemFloat32 || p.element == kElemFloat64 || p.element == kElemInt32 ||
                      p.element == kElemInt64 || p.element == kElemFloat16 || p.element == kElemBFloat16;
  return p.op == kScatterAdd && p.op_code == kOpIndexAdd && !p.counts && native;
}

// Copies and adds under this many units stay on the strided walk, as the gather tiles' outputs do
// (gather_tile_plan.cpp: a few thousand units ran faster in one strided pass than through the tile's loads,
// barrier and stores).
constexpr int64_t kMinTiledUnits = int64_t(1) << 15;

template <int Dims, int Bits>
void fill_params(const IndexTileChoice& c, int tile_a, int tile_b, IndexErrorSlot* slot, LaunchPlan& plan) {
  const ScatterProblem& p = c.problem;
  // The tile operands, numbered as GatherTileParams's: self as the output, src as x.
  IterationSpace s = p.space;
  s.operands = kGatherTileOperands;
  for (int d = 0; d < s.ndim; ++d) {
    s.strides[kTileOut][d] = p.space.strides[kSelfOperand][d];
    s.strides[kTileX][d] = p.space.strides[kSrcOperand][d];
    s.strides[kTileIndex][d] = p.space.strides[kIndexOperand][d];
    s.strides[kTileIndexPosition][d] = p.space.strides[kIndexPositionOperand][d];
  }
  ScatterTileParams<Dims, Bits> sq{};
  GatherTileParams<Dims, Bits>& q = sq.tiles;
  fill_tile_geometry(s, c.dim_b, tile_a, tile_b, kGatherTileOperands, q.tiles);
  q.tiles.data[kTileOut] = p.self;
  q.tiles.data[kTileX] = const_cast<void*>(p.src);
  q.tiles.data[kTileIndex] = const_cast<void*>(p.index);
  q.error = slot;
  q.axis_size = p.axis_size;
  q.axis_stride = typename OffsetTypes<Bits>::Stride(p.axis_stride);
  q.op_code = p.op_code;
  sq.alpha = p.alpha;
  sq.alpha_int = p.alpha_int;
  sq.self_lo = p.self_lo;
  sq.self_hi = p.self_hi;
  plan.set_params(sq);
}

template <int Bits>
void fill_params_for_dims(int dims, const IndexTileChoice& c, int tile_a, int tile_b, IndexErrorSlot* slot,
                          LaunchPlan& plan) {
  switch (dims) {
    case 2: return fill_params<2, Bits>(c, tile_a, tile_b, slot, plan);
    case 3: return fill_params<3, Bits>(c, tile_a, tile_b, slot, plan);
    default: return fill_params<kMaxDims, Bits>(c, tile_a, tile_b, slot, plan);
  }
}

}  // namespace

int set_scatter_tiles(int mode) { return g_scatter_tiles.exchange(mode); }

bool index_tile_choice(const ScatterProblem& p, const DeviceInfo& device, IndexTileChoice& c) {
  if (!(p.op == kScatterCopy || tiled_add(p)) || g_scatter_tiles.load(std::memory_order_relaxed) == 0 ||
      p.space.numel() < kMinTiledUnits)
    return false;
  c.problem = p;  // only now: most calls stop above, with no copy of the problem
  IterationSpace& s = c.problem.space;
  // Self's memory order, the indexed dim counted where its writes land (at the axis's stride), then src's.
  IterationSpace key = s;
  for (int d = 0; d < key.ndim; ++d)
    if (key.strides[kSelfOperand][d] == 0 && key.strides[kIndexOperand][d] != 0)
      key.strides[kSelfOperand][d] = std::max<int64_t>(1, magnitude(p.axis_stride));
  const int priority[] = {kSelfOperand, kSrcOperand};
  int order[kMaxDims + 16];
  memory_order(key, priority, 2, order);
  permute_dims(s, order);
  collapse(s);
  const int a = s.ndim - 1;
  if (s.ndim < 2 || s.ndim > kMaxDims || s.sizes[a] < kMinTileExtent) return false;
  // self written along a; src's step along a past its stride along b (an src expanded along a, stride 0, reads
  // one address a warp on the walk already)
  const int64_t src_step_a = magnitude(s.strides[kSrcOperand][a]);
  // (and the index constant along a: scatter_add_'s full index varies along every dim)
  if (magnitude(s.strides[kSelfOperand][a]) != 1 || src_step_a <= 1 || s.strides[kIndexOperand][a] != 0) return false;
  int b = -1;
  for (int d = a - 1; d >= 0; --d)
    if (s.strides[kSrcOperand][d] != 0 &&
        (b < 0 || magnitude(s.strides[kSrcOperand][d]) < magnitude(s.strides[kSrcOperand][b])))
      b = d;
  if (b < 0 || s.sizes[b] < kMinTileExtent || magnitude(s.strides[kSrcOperand][b]) >= src_step_a) return false;
  const bool index_each = s.strides[kIndexOperand][b] != 0;
  // b the indexed dim (src stored with it innermost): each row of b lands on another row of self, and the
  // walk's lanes along a read src a sector each, that the rows after re-read from the L2 where src fits in
  // it. Tiles only past half the L2 (H200, NOTES 116: of 141 sweep plans timed both ways, the 47 such tiles
  // within 25 MB ran 1.01x the walk's speed in geomean, from 0.71x to 1.86x; the 7 past it 1.47x, none
  // slower; the 87 tiles with one index value a tile 1.35x, one slower: 0.77x, float64 rows of 19).
  if (index_each && !device.past_half_l2(s.numel() * p.element_bytes)) return false;
  c.dim_b = b;
  c.index_each = index_each;
  return true;
}

void plan_index_tiles(const IndexTileChoice& c, bool offsets_fit_32_bits, IndexErrorSlot* error_slot,
                     const DeviceInfo& device, LaunchPlan& plan) {
  const ScatterProblem& p = c.problem;
  const IterationSpace& s = p.space;
  const LaunchTuning& tuning = plan.tuning.config;
  int tile_a = 0, tile_b = 0;
  tile_edges(s.sizes[s.ndim - 1], s.sizes[c.dim_b], tuning.threads, tile_a, tile_b);
  const int block = tile_threads(tuning.threads, tile_a, tile_b);
  shrink_to_shared_memory(tile_a, tile_b, [&](int ta, int tb) {
    return int64_t(ta) * staged_tile_pitch(p.element_bytes, tb) * p.element_bytes;
  });
  const int threads = std::min(block, tile_a * tile_b);
  const int dims = s.ndim <= 3 ? s.ndim : kMaxDims;
  using F = ScatterSpecFields;
  plan.spec = scatter_spec(p.element, p.index_bytes, dims, offsets_fit_32_bits ? 32 : 64, p.op, 1, 0, threads);
  plan.spec.fields[F::kAlpha] = p.has_alpha;
  plan.spec.fields[F::kTileA] = tile_a;
  plan.spec.fields[F::kTileB] = tile_b;
  plan.spec.fields[F::kTileIndexEach] = c.index_each;
  plan.block[0] = unsigned(threads);
  plan.block[1] = plan.block[2] = 1;
  plan.grid[0] = grid_blocks(tile_count(s, c.dim_b, tile_a, tile_b), 1, threads, device, tuning.waves);
  plan.grid[1] = plan.grid[2] = 1;
  plan.regime = c.index_each ? "tiled: src dense along the indexed dim, self along another, staged through shared "
                               "memory"
                             : "tiled: src dense along another dim than self, staged through shared memory";
  if (offsets_fit_32_bits)
    fill_params_for_dims<32>(dims, c, tile_a, tile_b, error_slot, plan);
  else
    fill_params_for_dims<64>(dims, c, tile_a, tile_b, error_slot, plan);
}

}  // namespace jitops
