#include "runtime/ops/gather_plan.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "jit/gather_source.h"
#include "jitops/gather_params.h"
#include "runtime/arg_error.h"
#include "runtime/int_math.h"
#include "runtime/ops/gather_block_order.h"
#include "runtime/ops/gather_ragged.h"
#include "runtime/ops/gather_row_local.h"
#include "runtime/ops/gather_tile_plan.h"

namespace jitops {
namespace {

constexpr int64_t kInt32Limit = int64_t(1) << 31;
// Index reuse in the linear layout: at most 4 rows a load, a thread moving
// twice the plain layout's units (the default: 2 loads of 4 rows, against 4
// units). Over the 46 sweep cases of seeds 40-106 it changes (H100): 1.19x; 8
// rows a load 1.20x, but a uint16 gather over 8 rows of 4.4 MB slabs of x
// fell to 0.73x; 2 rows 1.11x.
constexpr int kReuseRowsMost = 4;

std::atomic<int> g_gather_waves{0};

// The grid of the heuristic's walk. Units of 8 bytes or more: a block for
// every unit group, no grid-stride loop. Capped at 16 waves, resident
// blocks loop in groups that jump across the output (a group's next chunk is
// a grid ahead), and x's rows that the output reads again a few MB later are
// gone from L2 by then: seed 1870's uint64 gather along a channels-last C of
// 3 read x from DRAM several times, 799 us against 440 uncapped (PyTorch
// 573). Over 149 capped gathers of seeds 100-2400 (H100, NOTES 108) the
// uncapped grid ran 8- and 16-byte units 1.02x faster in geomean (63 plans,
// 2 slower by 3% or more) and smaller ones 0.98x (1-byte units 0.96x); on
// 110 plans of seeds 2400-4400 the rule takes, 1.027x (3 slower).
int heuristic_waves(const GatherProblem& p, const LaunchTuning& tuning) {
  const int forced = g_gather_waves.load(std::memory_order_relaxed);
  if (forced > 0) return forced;
  return p.element_bytes >= 8 ? kUncappedWaves : tuning.waves;
}

// Widens the moved unit to V elements when the innermost dim is contiguous in
// out and x, does not vary the index, and every stride and pointer allows it.
int choose_vector(GatherProblem& p, int max_bytes) {
  IterationSpace& s = p.space;
  if (p.flat) return 1;
  const int c = s.ndim - 1;
  if (s.strides[kOut][c] != 1 || s.strides[kX][c] != 1 || s.strides[kIndex][c] != 0) return 1;
  for (int v = max_bytes / p.element_bytes; v > 1; v /= 2) {
    const int64_t bytes = int64_t(v) * p.element_bytes;
    bool ok = s.sizes[c] % v == 0 && p.axis_stride % v == 0 && reinterpret_cast<uintptr_t>(p.out) % bytes == 0 &&
              reinterpret_cast<uintptr_t>(p.x) % bytes == 0;
    for (int d = 0; d < c && ok; ++d) ok = s.strides[kOut][d] % v == 0 && s.strides[kX][d] % v == 0;
    if (!ok) continue;
    s.sizes[c] /= v;
    s.strides[kIndexPosition][c] *= v;  // nonzero only for an expanded index: the unit's first element
    for (int d = 0; d < c; ++d) {
      s.strides[kOut][d] /= v;
      s.strides[kX][d] /= v;
    }
    p.axis_stride /= v;
    p.element_bytes = int(bytes);
    collapse(s);  // the inner dim may now be size 1
    return v;
  }
  return 1;
}

// The elements of the widest uniform pack choose_vector would give `p`, leaving `p` as it is (a copy: only
// where ragged packs might apply, past the layout and size tests of gather_ragged_packs).
int uniform_pack(const GatherProblem& p, int max_bytes) {
  GatherProblem uniform = p;
  return choose_vector(uniform, max_bytes);
}

// Index reuse: where the index does not vary along a dim other than the
// innermost (an expanded index) but does along the innermost (a load per
// element), a thread loads each index value once for several rows of that
// dim. In the linear layout, each unit of that dim stands for `rows` of its
// rows; the 2-D layout shares one load among a thread's rows. The dims inside
// the reused one must hold a few warps of units: a warp's stores of one row
// stay contiguous (inside 4 units, lanes scattered over rows of out ran at
// half the speed).
struct IndexReuse {
  bool shared_rows = false;  // 2-D layout
  int rows = 1;              // linear layout: rows a unit stands for, along `dim`
  int dim = 0;
  int64_t extent = 0, out_stride = 0, x_stride = 0;
};

constexpr int64_t kReuseInnerUnits = 64;

IndexReuse plan_index_reuse(GatherProblem& p, const DeviceInfo& device, int threads) {
  IterationSpace& s = p.space;
  IndexReuse reuse;
  const int inner = s.ndim - 1;
  if (p.flat || s.ndim < 2 || s.strides[kIndex][inner] == 0) return reuse;
  if (s.ndim == 2) {  // the 2-D layout: a thread's rows share the load
    reuse.shared_rows = s.strides[kIndex][0] == 0;
    return reuse;
  }
  int best = -1;
  int64_t inside = s.sizes[inner];
  for (int d = inner - 1; d >= 0; inside *= s.sizes[d--])
    if (s.strides[kIndex][d] == 0 && s.sizes[d] > 1 && inside >= kReuseInnerUnits &&
        (best < 0 || s.sizes[d] > s.sizes[best]))
      best = d;
  if (best < 0) return reuse;
  // Fewer threads do the work: keep two blocks an SM, as choose_launch_shape
  // keeps them by unrolling less.
  int rows = int(std::min<int64_t>(kReuseRowsMost, pow2_at_least(s.sizes[best])));
  while (rows > 1 && ceil_div(s.numel(), int64_t(rows) * threads) < 2 * int64_t(device.sm_count)) rows /= 2;
  if (rows <= 1) return reuse;
  reuse.rows = rows;
  reuse.dim = best;
  reuse.extent = s.sizes[best];
  reuse.out_stride = s.strides[kOut][best];
  reuse.x_stride = s.strides[kX][best];
  s.sizes[best] = ceil_div(s.sizes[best], rows);
  s.strides[kOut][best] *= rows;
  s.strides[kX][best] *= rows;
  s.strides[kIndexPosition][best] *= rows;
  return reuse;
}

// Rows of fewer than 32 units that are not a power of two: a block of `cols`
// lanes a row, its warps spanning rows, where choose_launch_shape gives a row
// the next power of two of lanes and leaves the rest idle (PyTorch's linear
// walks keep every lane). Over 221 of the 2147 such plans of sweep seeds
// 100-909, drawn at random (H100, NOTES 94), the 49 over 8 us: 1.06x in
// geomean, 16 faster by 3% or more (seed 557's float32 gather of 5 columns,
// 106 -> 76 us; seed 910's take of 21 columns of a transposed x, 25.9 -> 18.6
// us, 0.72x -> 1.02x PyTorch), 5 slower by 3% to 5% (seed 115's float64 of 15
// columns, 464 -> 487 us, 15x PyTorch's). Calls under two blocks of threads an
// SM keep the shape: fewer, fuller blocks there cost ~0.3 us of ~5.
void pack_short_rows(const IterationSpace& s, const DeviceInfo& device, int threads, LaunchShape& shape) {
  if (shape.dims != 2) return;
  const int64_t cols = s.sizes[1];
  if (cols >= 32 || shape.block[0] == unsigned(cols) || s.numel() < int64_t(2) * device.sm_count * threads) return;
  shape.block[0] = unsigned(cols);
  shape.block[1] = unsigned(threads / cols);
  const int64_t rows_a_block = int64_t(shape.block[1]) * shape.unroll;
  shape.grid[1] = unsigned(std::min<int64_t>(shape.grid[1], ceil_div(s.sizes[0], rows_a_block)));
}

bool fits_32bit(const GatherProblem& p) {
  const IterationSpace& s = p.space;
  if (s.numel() >= kInt32Limit) return false;
  // ragged packs shift a unit's offsets down by up to a pack (16 elements at most)
  const int64_t margin = p.peel_len > 0 ? 16 : 0;
  for (int k = kOut; k <= kIndex; ++k)
    if (s.max_offset(k) + margin >= kInt32Limit) return false;
  if (p.flat) return p.x_layout.max_offset(0) < kInt32Limit && p.axis_size < kInt32Limit;
  int64_t axis_extent = (p.axis_size > 0 ? p.axis_size - 1 : 0) * (p.axis_stride < 0 ? -p.axis_stride : p.axis_stride);
  return s.max_offset(kX) + margin + axis_extent < kInt32Limit && p.axis_size < kInt32Limit;
}

template <int Bits, int Dims, int FlatDims, bool Reuse = false, bool Ragged = false>
void fill_params(const GatherProblem& p, const IndexReuse& reuse, int band, IndexErrorSlot* slot,
                 LaunchPlan& plan) {
  typedef GatherParams<Bits, Dims, FlatDims, Reuse, Ragged> Params;
  typedef typename Params::Divider Divider;
  typedef typename Params::Stride Stride;
  Params params;
  std::memset(&params, 0, sizeof(params));
  const IterationSpace& s = p.space;
  params.out = p.out;
  params.x = p.x;
  params.index = p.index;
  params.error = slot;
  params.numel = typename Params::Linear(s.numel());
  params.ndim = s.ndim;
  params.op_code = p.op_code;
  params.axis_size = p.axis_size;
  params.axis_stride = Stride(p.axis_stride);
  for (int d = 0; d < Dims; ++d) {
    bool used = d < s.ndim;
    params.sizes[d] = Divider(used ? s.sizes[d] : 1);
    params.out_strides[d] = used ? Stride(s.strides[kOut][d]) : 0;
    params.x_strides[d] = used ? Stride(s.strides[kX][d]) : 0;
    params.index_strides[d] = used ? Stride(s.strides[kIndex][d]) : 0;
    params.index_positions[d] = used ? s.strides[kIndexPosition][d] : 0;
  }
  if constexpr (Reuse) {
    params.reuse_dim = reuse.dim;
    params.reuse_extent = typename Params::Linear(reuse.extent);
    params.reuse_out_stride = Stride(reuse.out_stride);
    params.reuse_x_stride = Stride(reuse.x_stride);
  }
  if constexpr (Ragged) params.peel_len = typename Params::Linear(p.peel_len);
  params.x_ndim = p.flat ? p.x_layout.ndim : 0;
  params.band = band;
  for (int d = 0; d < FlatDims; ++d) {
    bool used = p.flat && d < p.x_layout.ndim;
    params.x_sizes[d] = Divider(used ? p.x_layout.sizes[d] : 1);
    params.x_flat_strides[d] = used ? Stride(p.x_layout.strides[0][d]) : 0;
  }
  plan.set_params(params);
}

// The walk's dims and, in flat mode, x's own (the spec's dims and flat fields).
template <int Bits>
void fill_params_for_dims(const GatherProblem& p, const IndexReuse& reuse, int dims, int band,
                          IndexErrorSlot* slot, LaunchPlan& plan) {
  with_param_dims(dims, [&](auto d) {
    constexpr int kDims = decltype(d)::value;
    if (p.flat) {
      with_param_dims(plan.spec.fields[GatherSpecFields::kFlat], [&](auto flat) {
        fill_params<Bits, kDims, decltype(flat)::value>(p, reuse, band, slot, plan);
      });
    } else if (p.peel_len > 0) {  // ragged packs
      fill_params<Bits, kDims, 1, false, true>(p, reuse, band, slot, plan);
    } else if (reuse.extent > 0) {  // the linear layout over 3 or more dims
      fill_params<Bits, kDims, 1, true>(p, reuse, band, slot, plan);
    } else {
      fill_params<Bits, kDims, 1>(p, reuse, band, slot, plan);
    }
  });
}

// What the gather launch depends on: the moved element, the index, the
// layout, and the sizes of the inner and outer collapsed dims.
TuningPoint gather_point(const GatherProblem& p) {
  const IterationSpace& s = p.space;
  const int64_t inner = s.ndim ? s.sizes[s.ndim - 1] : 1;
  TuningPoint point;
  point.family = KernelFamily::Gather;
  point.traits = {p.element_bytes, p.index_bytes, p.wrap, p.flat, std::min(s.ndim, kMaxDims + 1), p.op_code};
  point.bucket = {size_bucket(inner), size_bucket(s.numel() / std::max<int64_t>(1, inner)), size_bucket(p.axis_size)};
  return point;
}

}  // namespace

int set_gather_waves(int waves) { return g_gather_waves.exchange(waves); }

bool plan_gather(GatherProblem p, const DeviceInfo& device, IndexErrorSlot* error_slot, LaunchPlan& plan) {
  if (p.space.numel() == 0) return false;
  p.space.operands = kGatherOperands;
  const int priority[] = {kOut, kX};  // walk the output as it lies in memory, then x
  order_by_memory(p.space, priority, 2);
  collapse(p.space);
  if (p.flat) {
    collapse(p.x_layout);
    if (p.x_layout.ndim > kMaxDims)
      throw value_error("x has " + std::to_string(p.x_layout.ndim) + " dimensions that do not collapse; jitops "
                        "supports at most " + std::to_string(kMaxDims));
  }
  plan.tuning = resolve_tuning(gather_point(p), device, LaunchTuning());
  plan.tunable = true;
  const LaunchTuning& tuning = plan.tuning.config;
  // Ragged packs where no uniform pack of the full width fits (the rule: none of two elements or more).
  const int ragged = gather_ragged_packs(p, tuning.vector_bytes, &uniform_pack);
  if (!ragged) choose_vector(p, tuning.vector_bytes);
  if (p.space.ndim > kMaxDims)
    throw value_error("the output has " + std::to_string(p.space.ndim) + " dimensions that do not collapse; jitops "
                      "supports at most " + std::to_string(kMaxDims));
  const int bits = fits_32bit(p) ? 32 : 64;

  using F = GatherSpecFields;
  plan.spec = KernelSpec();
  plan.spec.family = KernelFamily::Gather;
  plan.spec.fields[F::kUnitBytes] = p.element_bytes;
  plan.spec.fields[F::kIndexBytes] = p.index_bytes;
  plan.spec.fields[F::kOffsetBits] = bits;
  plan.spec.fields[F::kWrap] = p.wrap;
  // Flat: x's own collapsed dims, which its offsets walk (kMaxDims past kSpecializedDims).
  plan.spec.fields[F::kFlat] = p.flat ? (p.x_layout.ndim <= kSpecializedDims ? std::max(1, p.x_layout.ndim) : kMaxDims) : 0;
  plan.spec.fields[F::kIndexReuse] = 1;
  plan.spec.fields[F::kRagged] = ragged;
  const GatherTileChoice tiles = ragged ? GatherTileChoice() : gather_tile_choice(p, device, tuning);
  if (tiles.dim_b >= 0) {
    plan_gather_tiles(p, tiles, bits == 32, error_slot, device, plan);
    return true;
  }
  const IndexReuse reuse = plan_index_reuse(p, device, tuning.threads);
  LaunchTuning shape_tuning = tuning;
  if (reuse.extent > 0) shape_tuning.unroll = std::max(1, 2 * tuning.unroll / reuse.rows);
  LaunchShape shape = choose_launch_shape(p.space, device, shape_tuning);
  pack_short_rows(p.space, device, tuning.threads, shape);
  const int row_local = gather_row_local_columns(p, shape, device, tuning.threads);
  // Row passes were measured against the capped grid (NOTES 87, 100, 102) and keep it where they apply;
  // elsewhere the heuristic's grid may go uncapped.
  const unsigned row_passes = row_local ? 0 : gather_row_passes(p, shape, device);
  if (row_passes) shape.grid[1] = row_passes;
  const int waves = heuristic_waves(p, tuning);
  if (!row_local && !row_passes && plan.tuning.origin == ConfigOrigin::Heuristic && waves != shape_tuning.waves) {
    shape_tuning.waves = waves;
    shape = choose_launch_shape(p.space, device, shape_tuning);
    pack_short_rows(p.space, device, tuning.threads, shape);
  }
  if (row_local) {  // a block a row, `row_local` columns a thread at a time
    shape.unroll = row_local;
    shape.block[0] = unsigned(tuning.threads);
    shape.block[1] = 1;
    shape.grid[0] = 1;
    shape.grid[1] = unsigned(std::min<int64_t>(65535, p.space.sizes[0]));
  }
  const int dims = shape.dims;
  plan.spec.fields[F::kDims] = dims;
  plan.spec.fields[F::kUnroll] = shape.unroll;
  plan.spec.fields[F::kIndexReuse] = dims == 2 ? (reuse.shared_rows && !row_local ? shape.unroll : 1) : reuse.rows;
  plan.spec.fields[F::kMaxThreads] = tuning.threads;
  plan.spec.fields[F::kRowLocal] = row_local ? 1 : 0;

  const GatherBlockOrder order = row_local ? GatherBlockOrder() : gather_block_order(p, shape, device, tuning.threads);
  if (order.row_group_a_block) shape.grid[1] = gather_row_groups(p, shape);
  if (order.regime) plan.regime = order.regime;
  if (row_passes) plan.regime = "2-D, one row group a block";
  if (row_local) plan.regime = "2-D, a block a row over every column";
  if (bits == 32)
    fill_params_for_dims<32>(p, reuse, dims, order.band, error_slot, plan);
  else
    fill_params_for_dims<64>(p, reuse, dims, order.band, error_slot, plan);

  std::copy(shape.grid, shape.grid + 3, plan.grid);
  std::copy(shape.block, shape.block + 3, plan.block);
  return true;
}

}  // namespace jitops
