#include "runtime/ops/elementwise_tile_plan.h"

#include <algorithm>
#include <atomic>

#include "jit/elementwise_source.h"
#include "jitops/elementwise_tile_params.h"
#include "runtime/dtype.h"
#include "runtime/int_math.h"

namespace jitops {
namespace {

std::atomic<bool> g_fitted_edges{true};

// The dim operand k is densest along: its smallest non-zero stride (the
// innermost on a tie), or -1 for an operand that is one element throughout.
int densest_dim(const IterationSpace& s, int k) {
  int best = -1;
  for (int d = s.ndim - 1; d >= 0; --d)
    if (s.strides[k][d] != 0 && (best < 0 || magnitude(s.strides[k][d]) < magnitude(s.strides[k][best]))) best = d;
  return best;
}

// Operands read better along b than along a: varying along both, with the
// smaller step along b. One broadcast along a (stride 0) is read along a:
// the lanes of a warp then share its address.
uint32_t staged_along(const ElementwiseProblem& p, const IterationSpace& s, int b) {
  const int a = s.ndim - 1;
  uint32_t mask = 0;
  for (int k = 0; k < p.inputs + p.outputs; ++k)
    if (!p.scalar[k] && s.strides[k][a] != 0 && s.strides[k][b] != 0 &&
        magnitude(s.strides[k][b]) < magnitude(s.strides[k][a]))
      mask |= 1u << k;
  return mask;
}

// The bytes an element of the space moves over all array operands (numbers move none).
int64_t bytes_an_element(const ElementwiseProblem& p) {
  int64_t bytes = 0;
  for (int k = 0; k < p.inputs + p.outputs; ++k)
    if (!p.scalar[k]) bytes += dtype_info(p.dtypes[k]).bytes();
  return bytes;
}

// Whether the tiles run over the batch before b: where an input is broadcast along a batch dim (stride 0
// there; the batch is every dim but a and b) and, b first, the tiles between two reads of its stretch (every
// tile along a and b, over the batch dims inside that one) move more bytes than the L2 holds. Then the
// stretch is read from DRAM once, the rest from L2: a float64 maximum of (16, 7, 43, 16384) by (7, 43, 16384),
// both transposed, 994.8 -> 557.7 us. Where the L2 keeps it anyway, b first kept its edge (25 plans of
// seeds 100-600 run batch first: 1.00x, from 0.84x to 1.78x).
bool batch_first(const ElementwiseProblem& p, const IterationSpace& s, int b, const DeviceInfo& device) {
  const int a = s.ndim - 1;
  const int64_t element_bytes = bytes_an_element(p);
  for (int k = 0; k < p.inputs; ++k) {
    if (p.scalar[k]) continue;
    int64_t between = s.sizes[a] * s.sizes[b];  // elements between two reads of a stretch along the batch dim d
    for (int d = s.ndim - 1; d >= 0; --d) {
      if (d == a || d == b) continue;
      if (s.sizes[d] > 1 && s.strides[k][d] == 0 && between * element_bytes > device.l2_bytes) return true;
      between *= s.sizes[d];
    }
  }
  return false;
}

// The L2 bytes an element that the strided walk reads of operand k: the 32-byte sectors that a block's window
// of consecutive elements touches (elementwise.cuh: 256 threads x 4 items), over the window. A dim the
// operand is broadcast along (stride 0) re-reads the window's sectors from L1.
double walk_sector_bytes(const ElementwiseProblem& p, const IterationSpace& s, int k) {
  constexpr int64_t kWalkWindow = 1024;
  const int64_t e = dtype_info(p.dtypes[k]).bytes();
  const int dense = densest_dim(s, k);
  int64_t span = 1;
  double sectors = 1;
  for (int d = s.ndim - 1; d >= 0 && span < kWalkWindow; --d) {
    const int64_t m = std::min<int64_t>(s.sizes[d], ceil_div(kWalkWindow, span));
    span *= m;
    if (s.strides[k][d] == 0) continue;
    const int64_t step = magnitude(s.strides[k][d]) * e;
    sectors *= (d == dense && step < 32) ? double(ceil_div(m * step, 32)) : double(m);
  }
  return sectors * 32.0 / double(std::min(span, kWalkWindow));
}

// Whether staging would save the walk little: every staged operand is broadcast along some dim, and the
// walk's reads of it (walk_sector_bytes) come to at most a tenth of the bytes an element moves over all
// operands. Then the walk's reads of it mostly hit L1, and the tile's shared-memory round trip, barriers and
// partly empty edge tiles are all cost: seed 920's int32 (32x37x32768) stored with dim 1 innermost minus an
// int64 (37x32768) broadcast along dim 0, tiled 436.4 us, walked 195.5 (PyTorch 225.1). Rare: 8 sweep plans
// of seeds 100-1800, none slower walked by more than 1% (the 3 of seeds past 920, not seen when the rule was
// chosen, 4-15% faster; NOTES 97). Broadcast operands the walk reads a sector an element of keep the tile
// (seed 171's uint8 (16x2x215x16384) plus a transposed (215x16384): tiled 199.9 us, walked 891.7).
bool staging_saves_little(const ElementwiseProblem& p, const IterationSpace& s, uint32_t staged) {
  const double element_bytes = double(bytes_an_element(p));
  for (int k = 0; k < p.inputs + p.outputs; ++k) {
    if (!((staged >> k) & 1)) continue;
    bool broadcast = false;
    for (int d = 0; d < s.ndim; ++d) broadcast = broadcast || (s.sizes[d] > 1 && s.strides[k][d] == 0);
    if (!broadcast || walk_sector_bytes(p, s, k) > element_bytes / 10) return false;
  }
  return true;
}

int64_t staged_bytes(const ElementwiseProblem& p, uint32_t staged, int tile_a, int tile_b) {
  int64_t bytes = 0;
  for (int k = 0; k < p.inputs + p.outputs; ++k)
    if ((staged >> k) & 1) {
      const int e = dtype_info(p.dtypes[k]).bytes();
      bytes += int64_t(tile_a) * staged_tile_pitch(e, tile_b) * e;
    }
  return bytes;
}

template <int Dims, int Bits>
void fill_tile_params(const ElementwiseProblem& p, const IterationSpace& s, const ElementwiseTile& t,
                      LaunchPlan& plan) {
  ElementwiseTileParams<Dims, Bits> q{};
  fill_tile_geometry(s, t.dim_b, t.tile_a, t.tile_b, p.inputs + p.outputs, q);
  for (int k = 0; k < p.inputs + p.outputs; ++k) {
    q.data[k] = p.scalar[k] ? nullptr : p.arrays[k]->data;
    q.scalar[k] = p.scalar_bits[k];
  }
  plan.set_params(q);
}

template <int Bits>
void fill_tile_params_dims(int dims, const ElementwiseProblem& p, const IterationSpace& s, const ElementwiseTile& t,
                           LaunchPlan& plan) {
  switch (dims) {
    case 2: fill_tile_params<2, Bits>(p, s, t, plan); break;
    case 3: fill_tile_params<3, Bits>(p, s, t, plan); break;
    default: fill_tile_params<kMaxDims, Bits>(p, s, t, plan); break;
  }
}

// An edge of the tile fitted to its dim: where tiles of the power of two would leave over a quarter of their
// rows along the dim idle (a b of 19 in tiles of 32: 13 idle rows in 32), the fewest tiles of at most that
// edge, cut equal (one of 19; 35 in two of 18). Fitted tiles lose the 32-byte alignment of their rows: over
// 170 sweep plans of seeds 100-1900 A/B'd on an H100 (NOTES 102), fitting every edge lost up to 13% where
// under a tenth was idle (121 in four tiles of 31, each row over one more sector), and gained where over a
// quarter was: the 33 plans this fits 1.07x in geomean, seed 1829's uint8 (19x286875) times its transpose
// 23.2 -> 17.9 us (PyTorch 20.5), the least 0.95x (a 7 us call).
int fitted_edge(int64_t size, int edge) {
  return g_fitted_edges.load() ? int(fitted_width(size, edge)) : edge;
}

// The tile_edges, fitted to the sizes of a and b, shrunk until the staged operands' tiles fit in shared
// memory; returns the block's threads (tile_threads, before the shrink).
int shape_tile(const ElementwiseProblem& p, const IterationSpace& s, int threads, ElementwiseTile& tile) {
  tile_edges(s.sizes[s.ndim - 1], s.sizes[tile.dim_b], threads, tile.tile_a, tile.tile_b);
  tile.tile_a = fitted_edge(s.sizes[s.ndim - 1], tile.tile_a);
  tile.tile_b = fitted_edge(s.sizes[tile.dim_b], tile.tile_b);
  const int block = tile_threads(threads, tile.tile_a, tile.tile_b);
  shrink_to_shared_memory(tile.tile_a, tile.tile_b, [&](int a, int b) { return staged_bytes(p, tile.staged, a, b); });
  return std::min(block, tile.tile_a * tile.tile_b);
}

}  // namespace

void set_elementwise_tile_fitted(bool fitted) { g_fitted_edges = fitted; }

void tile_edges(int64_t size_a, int64_t size_b, int threads, int& tile_a, int& tile_b) {
  const int64_t elements = kTileItemsPerThread * int64_t(threads);
  int64_t edge_b = 1;
  while (edge_b * edge_b < elements) edge_b <<= 1;
  int64_t tb = std::min(edge_b, pow2_at_least(size_b));
  const int64_t ta = std::min(elements / tb, pow2_at_least(size_a));
  tb = std::min(elements / ta, pow2_at_least(size_b));
  tile_a = int(ta);
  tile_b = int(tb);
}

int tile_threads(int threads, int tile_a, int tile_b) {
  int64_t block = ceil_div(int64_t(tile_a) * tile_b, kTileItemsPerThread);
  if (block > 32) block = ceil_div(block, 32) * 32;  // a fitted tile (19 x 32) in whole warps: 160
  return int(std::min<int64_t>(threads, block));
}

int64_t tile_count(const IterationSpace& s, int dim_b, int tile_a, int tile_b) {
  const int a = s.ndim - 1;
  int64_t tiles = ceil_div(s.sizes[a], tile_a) * ceil_div(s.sizes[dim_b], tile_b);
  for (int d = 0; d < s.ndim; ++d)
    if (d != a && d != dim_b) tiles *= s.sizes[d];
  return tiles;
}

ElementwiseTile choose_elementwise_tile(const ElementwiseProblem& p, const IterationSpace& s) {
  ElementwiseTile tile;
  const int a = s.ndim - 1, operands = p.inputs + p.outputs;
  if (s.ndim < 2 || s.sizes[a] < kMinTileExtent) return tile;
  // b: the dense dim of an operand that disagrees with a, the one that stages the most bytes.
  int64_t best_bytes = 0;
  for (int k = 0; k < operands; ++k) {
    if (p.scalar[k] || s.strides[k][a] == 0) continue;
    const int b = densest_dim(s, k);
    if (b == a || b < 0 || s.sizes[b] < kMinTileExtent) continue;
    const uint32_t staged = staged_along(p, s, b);
    int64_t bytes = 0;
    for (int i = 0; i < operands; ++i)
      if ((staged >> i) & 1) bytes += dtype_info(p.dtypes[i]).bytes();
    if (bytes > best_bytes) {
      best_bytes = bytes;
      tile.dim_b = b;
      tile.staged = staged;
    }
  }
  if (tile.tiled() && staging_saves_little(p, s, tile.staged)) return ElementwiseTile();
  return tile;
}

void plan_elementwise_tiles(const ElementwiseProblem& p, const IterationSpace& s, ElementwiseTile tile,
                            bool offsets_fit_32_bits, const DeviceInfo& device, LaunchPlan& plan) {
  using F = ElementwiseSpecFields;
  const int threads = shape_tile(p, s, plan.tuning.config.threads, tile);
  const int dims = s.ndim <= 3 ? s.ndim : kMaxDims;
  const int64_t tiles = tile_count(s, tile.dim_b, tile.tile_a, tile.tile_b);
  KernelSpec& spec = plan.spec;
  spec.fields[F::kMaxThreads] = threads;
  spec.fields[F::kPack] = 1;
  spec.fields[F::kDims] = dims;
  spec.fields[F::kOffsetBits] = offsets_fit_32_bits ? 32 : 64;
  spec.fields[F::kUniformMask] = 0;
  spec.fields[F::kUnroll] = 0;
  spec.fields[F::kTileA] = tile.tile_a;
  spec.fields[F::kTileB] = tile.tile_b;
  spec.fields[F::kStagedMask] = int32_t(tile.staged);
  spec.fields[F::kTileBatchFirst] = batch_first(p, s, tile.dim_b, device);
  plan.block[0] = unsigned(threads);
  plan.grid[0] = grid_blocks(tiles, 1, threads, device, plan.tuning.config.waves);
  plan.regime = "tiled: operands dense along another dim staged through shared memory";
  if (offsets_fit_32_bits)
    fill_tile_params_dims<32>(dims, p, s, tile, plan);
  else
    fill_tile_params_dims<64>(dims, p, s, tile, plan);
}

}  // namespace jitops
