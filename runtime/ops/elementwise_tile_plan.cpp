#include "runtime/ops/elementwise_tile_plan.h"

#include <algorithm>

#include "jit/elementwise_source.h"
#include "jitops/elementwise_tile_params.h"
#include "runtime/dtype.h"

namespace jitops {
namespace {

int64_t magnitude(int64_t stride) { return stride < 0 ? -stride : stride; }

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

int64_t staged_bytes(const ElementwiseProblem& p, uint32_t staged, int tile_a, int tile_b) {
  int64_t bytes = 0;
  for (int k = 0; k < p.inputs + p.outputs; ++k)
    if ((staged >> k) & 1) {
      const int e = dtype_info(p.dtypes[k]).bytes();
      bytes += int64_t(tile_a) * staged_tile_pitch(e, tile_b) * e;
    }
  return bytes;
}

int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <int Dims, int Bits>
void fill_tile_params(const ElementwiseProblem& p, const IterationSpace& s, const ElementwiseTile& t, int64_t tiles,
                      LaunchPlan& plan) {
  typedef typename OffsetTypes<Bits>::Linear L;
  typedef typename OffsetTypes<Bits>::Stride S;
  typedef typename OffsetTypes<Bits>::Divider D;
  const int a = s.ndim - 1, b = t.dim_b, operands = p.inputs + p.outputs;
  ElementwiseTileParams<Dims, Bits> q{};
  q.tiles = L(tiles);
  q.size_a = L(s.sizes[a]);
  q.size_b = L(s.sizes[b]);
  q.tiles_a = D(L(ceil_div(s.sizes[a], t.tile_a)));
  q.tiles_b = D(L(ceil_div(s.sizes[b], t.tile_b)));
  for (int k = 0; k < operands; ++k) {
    q.data[k] = p.scalar[k] ? nullptr : p.arrays[k]->data;
    q.scalar[k] = p.scalar_bits[k];
    q.stride_a[k] = S(s.strides[k][a]);
    q.stride_b[k] = S(s.strides[k][b]);
  }
  for (int d = 0; d < s.ndim; ++d) {
    if (d == a || d == b) continue;
    q.batch_sizes[q.batch_ndim] = D(L(s.sizes[d]));
    for (int k = 0; k < operands; ++k) q.batch_strides[k][q.batch_ndim] = S(s.strides[k][d]);
    ++q.batch_ndim;
  }
  plan.set_params(q);
}

template <int Bits>
void fill_tile_params_dims(int dims, const ElementwiseProblem& p, const IterationSpace& s, const ElementwiseTile& t,
                           int64_t tiles, LaunchPlan& plan) {
  switch (dims) {
    case 2: fill_tile_params<2, Bits>(p, s, t, tiles, plan); break;
    case 3: fill_tile_params<3, Bits>(p, s, t, tiles, plan); break;
    default: fill_tile_params<kMaxDims, Bits>(p, s, t, tiles, plan); break;
  }
}

// The tile's edges for blocks of `threads`: 4 elements a thread (the loads
// a thread has in flight, as the strided walk's unroll), so the block size
// tunes the tile: 256 threads take 32 x 32 (rows of 32-256 bytes, 1- to
// 8-byte elements), 1024 take 64 x 64. Four a thread keeps ~50 registers with
// two staged operands; 16 a thread (64 x 64 at 256 threads) took 176-184,
// one block an SM. A short dim gives its share to the other, so the tile
// keeps its elements; many staged operands shrink it into shared memory.
void shape_tile(const ElementwiseProblem& p, const IterationSpace& s, int threads, ElementwiseTile& tile) {
  const int64_t elements = 4 * int64_t(threads);
  int64_t edge_b = 1;
  while (edge_b * edge_b < elements) edge_b <<= 1;
  const int64_t size_a = pow2_at_least(s.sizes[s.ndim - 1]), size_b = pow2_at_least(s.sizes[tile.dim_b]);
  int64_t tb = std::min(edge_b, size_b);
  const int64_t ta = std::min(elements / tb, size_a);
  tb = std::min(elements / ta, size_b);
  tile.tile_a = int(ta);
  tile.tile_b = int(tb);
  while (staged_bytes(p, tile.staged, tile.tile_a, tile.tile_b) > kTileSharedBytes) {
    if (tile.tile_a >= tile.tile_b)
      tile.tile_a /= 2;
    else
      tile.tile_b /= 2;
  }
}

}  // namespace

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
  return tile;
}

void plan_elementwise_tiles(const ElementwiseProblem& p, const IterationSpace& s, ElementwiseTile tile,
                            bool offsets_fit_32_bits, const DeviceInfo& device, LaunchPlan& plan) {
  using F = ElementwiseSpecFields;
  shape_tile(p, s, plan.tuning.config.threads, tile);
  // A tile shrunk for shared memory or by short dims may hold fewer elements than the block has threads.
  const int threads = int(std::min<int64_t>(plan.tuning.config.threads, int64_t(tile.tile_a) * tile.tile_b));
  const int a = s.ndim - 1, dims = s.ndim <= 3 ? s.ndim : kMaxDims;
  int64_t tiles = ceil_div(s.sizes[a], tile.tile_a) * ceil_div(s.sizes[tile.dim_b], tile.tile_b);
  for (int d = 0; d < s.ndim; ++d)
    if (d != a && d != tile.dim_b) tiles *= s.sizes[d];
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
  plan.block[0] = unsigned(threads);
  plan.grid[0] = grid_blocks(tiles, 1, threads, device, plan.tuning.config.waves);
  plan.regime = "tiled: operands dense along another dim staged through shared memory";
  if (offsets_fit_32_bits)
    fill_tile_params_dims<32>(dims, p, s, tile, tiles, plan);
  else
    fill_tile_params_dims<64>(dims, p, s, tile, tiles, plan);
}

}  // namespace jitops
