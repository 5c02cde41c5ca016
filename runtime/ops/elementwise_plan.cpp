#include "runtime/ops/elementwise_plan.h"

#include <algorithm>
#include <cstdint>

#include "runtime/arg_error.h"
#include "runtime/collapse.h"
#include "runtime/launch_shape.h"
#include "runtime/ops/elementwise_tile_plan.h"

namespace jitops {
namespace {

// The heuristic default: blocks of 256, a grid of up to 32 waves, 16-byte packs.
LaunchTuning default_tuning() {
  LaunchTuning t;
  t.threads = 256;
  t.unroll = 1;
  t.waves = kElementwiseWaves;
  t.vector_bytes = 16;
  return t;
}

// Element strides of `a` seen through the broadcast shape (0 where broadcast).
void broadcast_strides(const TensorDesc& a, int ndim, int64_t* out) {
  const int lead = ndim - a.ndim;
  for (int d = 0; d < ndim; ++d) {
    const int ad = d - lead;
    out[d] = ad < 0 || a.shape[ad] == 1 ? 0 : a.strides[ad];
  }
}

int pack_for(const ElementwiseProblem& p, int operands, int max_pack_bytes) {
  int pack = max_pack_bytes;
  for (int k = 0; k < operands; ++k)
    if (!p.scalar[k]) pack = std::min(pack, std::max(1, max_pack_bytes / dtype_info(p.dtypes[k]).bytes()));
  while (pack > 1) {
    bool aligned = true;
    for (int k = 0; k < operands && aligned; ++k) {
      if (p.scalar[k]) continue;
      const uintptr_t bytes = uintptr_t(pack) * dtype_info(p.dtypes[k]).bytes();
      aligned = reinterpret_cast<uintptr_t>(p.arrays[k]->data) % bytes == 0;
    }
    if (aligned) break;
    pack /= 2;
  }
  return pack;
}

// Packs a thread of the dense loop (NOTES 79). Where a wider output narrows the
// pack, so that an input moves under 16 bytes a load (uint8 / uint8 -> float32:
// 4), two or four packs a thread ran 1.08-1.22x faster at every size. Where
// every load is a full 16-byte vector, one operand moving has half the bytes
// in flight of PyTorch's unrolled loop: two packs ran 2-4% faster up to ~4
// waves of resident threads and 0-2% slower past that, so only there. At most
// 32 bytes of loads and 64 loaded and stored a thread (uint8 + 2.5 ran 7%
// slower at four packs than at one), halved while the grid would give an SM
// fewer than two blocks. Tuned and forced configurations give it as they are.
int dense_unroll(const ElementwiseProblem& moving, int operands, int pack, int64_t packs, int threads,
                 const ResolvedTuning& tuning, const DeviceInfo& device) {
  if (tuning.origin != ConfigOrigin::Heuristic) return std::max(1, tuning.config.unroll);
  int loaded = 0, moved = 0, narrowest = 16;
  for (int k = 0; k < operands; ++k) {
    if (moving.scalar[k] && k < moving.inputs) continue;
    const int bytes = pack * dtype_info(moving.dtypes[k]).bytes();
    if (k < moving.inputs || moving.load_outputs) {
      loaded += bytes;
      narrowest = std::min(narrowest, bytes);
    }
    moved += bytes * ((k >= moving.inputs) + (k < moving.inputs || moving.load_outputs));
  }
  const int64_t wave = int64_t(device.max_threads_per_sm) * device.sm_count;
  if (narrowest >= 16 && packs > 4 * wave) return 1;
  int unroll = 1;
  while (unroll < 4 && loaded * unroll < 32 && moved * unroll * 2 <= 64) unroll *= 2;
  while (unroll > 1 && packs < int64_t(threads) * unroll * 2 * device.sm_count) unroll /= 2;
  return unroll;
}

}  // namespace

std::vector<int> inputs_memory_order(const TensorDesc* const* inputs, int count, int ndim, const int64_t* shape) {
  IterationSpace s;
  s.ndim = ndim;
  s.operands = count;
  int priority[kMaxElementwiseOperands];
  for (int d = 0; d < ndim; ++d) s.sizes[d] = shape[d];
  for (int k = 0; k < count; ++k) {
    broadcast_strides(*inputs[k], ndim, s.strides[k]);
    priority[k] = k;
  }
  int order[kMaxTensorDims];
  memory_order(s, priority, count, order);
  for (int i = 0; i < ndim; ++i)
    if (order[i] != i) return std::vector<int>(order, order + ndim);
  return {};  // C order: nothing to reorder
}

void broadcast_into(const TensorDesc& a, const char* name, int& ndim, int64_t* shape) {
  const int n = std::max(ndim, a.ndim);
  int64_t merged[kMaxTensorDims];
  for (int d = 0; d < n; ++d) {
    const int sd = d - (n - ndim), ad = d - (n - a.ndim);
    const int64_t s = sd >= 0 ? shape[sd] : 1, v = ad >= 0 ? a.shape[ad] : 1;
    if (s != v && s != 1 && v != 1)
      throw value_error(std::string(name) + ": shape " + shape_str(a) + " does not broadcast with " +
                        shape_str(shape, ndim));
    merged[d] = s == 1 ? v : s;
  }
  ndim = n;
  std::copy(merged, merged + n, shape);
}

namespace {

// The widest pack (at most `limit`) along the strided layout's inner dim:
// every array operand's inner stride is 1 or 0, the inner size divides into
// packs, and every dense operand's pack starts aligned (outer strides and
// pointer multiples of the pack).
int strided_pack(const ElementwiseProblem& p, const IterationSpace& s, int operands, int limit) {
  const int inner = s.ndim - 1;
  for (int k = 0; k < operands; ++k)
    if (!p.scalar[k] && s.strides[k][inner] != 0 && s.strides[k][inner] != 1) return 1;
  int pack = limit;
  while (pack > 1) {
    bool ok = s.sizes[inner] % pack == 0;
    for (int k = 0; k < operands && ok; ++k) {
      if (p.scalar[k] || s.strides[k][inner] == 0) continue;
      ok = reinterpret_cast<uintptr_t>(p.arrays[k]->data) % (uintptr_t(pack) * dtype_info(p.dtypes[k]).bytes()) == 0;
      for (int d = 0; d < inner && ok; ++d) ok = s.strides[k][d] % pack == 0;
    }
    if (ok) break;
    pack /= 2;
  }
  return pack;
}

template <int Dims, int Bits>
void fill_strided(const ElementwiseProblem& p, const IterationSpace& s, int operands, int pack, int64_t items,
                  LaunchPlan& plan) {
  typedef typename OffsetTypes<Bits>::Linear L;
  typedef typename OffsetTypes<Bits>::Stride S;
  typedef typename OffsetTypes<Bits>::Divider D;
  ElementwiseParams<Dims, Bits> params{};
  params.n = L(items);
  params.ndim = s.ndim;
  const int inner = s.ndim - 1;
  for (int d = 0; d < s.ndim; ++d) params.sizes[d] = D(L(d == inner ? s.sizes[d] / pack : s.sizes[d]));
  for (int k = 0; k < operands; ++k) {
    params.data[k] = p.scalar[k] ? nullptr : p.arrays[k]->data;
    params.scalar[k] = p.scalar_bits[k];
    for (int d = 0; d < s.ndim; ++d) params.strides[k][d] = S(d == inner ? s.strides[k][d] * pack : s.strides[k][d]);
  }
  plan.set_params(params);
}

template <int Bits>
void fill_strided_dims(int dims, const ElementwiseProblem& p, const IterationSpace& s, int operands, int pack,
                       int64_t items, LaunchPlan& plan) {
  with_param_dims(dims, [&](auto d) { fill_strided<decltype(d)::value, Bits>(p, s, operands, pack, items, plan); });
}

}  // namespace

bool plan_elementwise(const ElementwiseProblem& p, const DeviceInfo& device, LaunchPlan& plan) {
  using F = ElementwiseSpecFields;
  const int operands = p.inputs + p.outputs;
  int64_t n = 1;
  for (int d = 0; d < p.ndim; ++d) n *= p.shape[d];
  if (n == 0) return false;
  IterationSpace s;
  s.ndim = p.ndim;
  s.operands = operands;
  for (int d = 0; d < p.ndim; ++d) s.sizes[d] = p.shape[d];
  for (int k = 0; k < operands; ++k) {
    if (p.scalar[k])
      std::fill(s.strides[k], s.strides[k] + p.ndim, 0);
    else
      broadcast_strides(*p.arrays[k], p.ndim, s.strides[k]);
  }
  // Walk the dims in the operands' memory order (outputs first), so that
  // operands laid out alike, transposed or channels-last, collapse to dense.
  int priority[kMaxElementwiseOperands], count = 0;
  for (int k = p.inputs; k < operands; ++k) priority[count++] = k;
  for (int k = 0; k < p.inputs; ++k)
    if (!p.scalar[k]) priority[count++] = k;
  order_by_memory(s, priority, count);
  collapse(s);
  // Dense: each array operand walks its elements in order (stride 1) or is one element throughout (stride 0).
  bool dense = s.ndim == 1;
  for (int k = 0; k < operands && dense; ++k) dense = p.scalar[k] || s.strides[k][0] == 1 || s.strides[k][0] == 0;
  if (!dense && s.ndim > kMaxDims)
    throw value_error("operands: at most " + std::to_string(kMaxDims) + " dimensions after merging contiguous ones (got " +
                      std::to_string(s.ndim) + ")");

  // Operands dense along different dims: tiles through shared memory (runtime/ops/elementwise_tile_plan.h).
  const ElementwiseTile tile = dense ? ElementwiseTile() : choose_elementwise_tile(p, s);

  uint32_t types = 0, scalars = 0;
  for (int k = 0; k < operands; ++k) {
    types |= uint32_t(p.dtypes[k]) << (4 * k);
    scalars |= uint32_t(p.scalar[k]) << k;
  }
  // The launch depends on the operation, the operand types, the layout and the element count.
  TuningPoint point;
  point.family = KernelFamily::Elementwise;
  point.traits = {p.operation, int32_t(types), int32_t(scalars), p.inputs * 16 + p.outputs, dense ? 0 : s.ndim,
                  p.load_outputs};
  // Tiled launches are points of their own, bucketed by the extents of a and b (at least 16, so never 2^0)
  // up to the longest a tile takes.
  auto extent = [&](int d) { return int8_t(tile.tiled() ? std::min<int>(size_bucket(s.sizes[d]), 8) : 0); };
  point.bucket = {size_bucket(n), extent(s.ndim - 1), extent(tile.tiled() ? tile.dim_b : 0)};
  plan.tuning = resolve_tuning(point, device, default_tuning());
  plan.tunable = true;
  const int threads = plan.tuning.config.threads, waves = plan.tuning.config.waves;

  KernelSpec& spec = plan.spec;
  spec = KernelSpec();
  spec.family = KernelFamily::Elementwise;
  spec.fields[F::kOperation] = p.operation;
  spec.fields[F::kInputs] = p.inputs;
  spec.fields[F::kOutputs] = p.outputs;
  spec.fields[F::kMaxThreads] = threads;
  spec.fields[F::kLoadOutputs] = p.load_outputs;
  spec.fields[F::kDTypes] = int32_t(types);
  spec.fields[F::kScalarMask] = int32_t(scalars);
  plan.block[0] = unsigned(threads);
  const int inner = s.ndim - 1;
  auto uniform_mask = [&] {
    uint32_t mask = 0;
    for (int k = 0; k < p.inputs; ++k)
      if (!p.scalar[k] && s.strides[k][inner] == 0) mask |= 1u << k;
    return int32_t(mask);
  };
  if (dense) {
    ElementwiseProblem packed = p;  // the pack is chosen over the operands that move
    for (int k = 0; k < operands; ++k) packed.scalar[k] = p.scalar[k] || s.strides[k][0] == 0;
    const int pack = pack_for(packed, operands, plan.tuning.config.vector_bytes);
    spec.fields[F::kPack] = pack;
    spec.fields[F::kDims] = 0;
    spec.fields[F::kOffsetBits] = 64;
    spec.fields[F::kUniformMask] = uniform_mask();
    const int64_t packs = std::max<int64_t>(1, n / pack);
    const int unroll = dense_unroll(packed, operands, pack, packs, threads, plan.tuning, device);
    if (unroll > 1) {
      spec.fields[F::kUnroll] = unroll;
      if (n < (int64_t(1) << 31)) spec.fields[F::kOffsetBits] = 32;
    }
    ElementwiseParams<0> params{};
    params.n = n;
    for (int k = 0; k < operands; ++k) {
      params.data[k] = p.scalar[k] ? nullptr : p.arrays[k]->data;
      params.scalar[k] = p.scalar_bits[k];
    }
    plan.grid[0] = grid_blocks(packs, int64_t(threads) * unroll, threads, device, waves);
    plan.regime = pack > 1 ? "dense, packed" : "dense";
    plan.set_params(params);
    return true;
  }
  // Strided and tiled: offsets from coordinates, 32-bit where every offset fits.
  bool fits = n < (int64_t(1) << 31);
  for (int k = 0; k < operands && fits; ++k) fits = p.scalar[k] || s.max_offset(k) < (int64_t(1) << 31);
  if (tile.tiled()) {
    plan_elementwise_tiles(p, s, tile, fits, device, plan);
    return true;
  }
  // Strided: packs along a dense inner dim.
  int limit = plan.tuning.config.vector_bytes;
  for (int k = 0; k < operands; ++k)
    if (!p.scalar[k]) limit = std::min(limit, std::max(1, plan.tuning.config.vector_bytes / dtype_info(p.dtypes[k]).bytes()));
  const int pack = strided_pack(p, s, operands, limit);
  const int dims = s.ndim <= kSpecializedDims ? s.ndim : kMaxDims;
  const int64_t items = n / pack;
  spec.fields[F::kPack] = pack;
  spec.fields[F::kDims] = dims;
  spec.fields[F::kOffsetBits] = fits ? 32 : 64;
  spec.fields[F::kUniformMask] = pack > 1 ? uniform_mask() : 0;
  // Items a thread has in flight: 4 (PyTorch's unrolled loop) unless tuned otherwise.
  // (halved while the grid would give an SM fewer than two blocks).
  int unroll = plan.tuning.origin == ConfigOrigin::Heuristic ? 4 : std::max(1, plan.tuning.config.unroll);
  if (plan.tuning.origin == ConfigOrigin::Heuristic)
    while (unroll > 1 && items < int64_t(threads) * unroll * 2 * device.sm_count) unroll /= 2;
  spec.fields[F::kUnroll] = unroll;
  plan.grid[0] = grid_blocks(items, int64_t(threads) * unroll, threads, device, waves);
  plan.regime = pack > 1 ? "strided, packed along the inner dim" : "strided";
  if (fits)
    fill_strided_dims<32>(dims, p, s, operands, pack, items, plan);
  else
    fill_strided_dims<64>(dims, p, s, operands, pack, items, plan);
  return true;
}

}  // namespace jitops
