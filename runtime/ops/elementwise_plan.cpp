#include "runtime/ops/elementwise_plan.h"

#include <algorithm>
#include <cstdint>

#include "runtime/arg_error.h"
#include "runtime/collapse.h"

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

}  // namespace

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
  collapse(s);
  bool dense = s.ndim == 1;
  for (int k = 0; k < operands && dense; ++k) dense = p.scalar[k] || s.strides[k][0] == 1;
  if (!dense && s.ndim > kMaxDims)
    throw value_error("operands: at most " + std::to_string(kMaxDims) + " dimensions after merging contiguous ones (got " +
                      std::to_string(s.ndim) + ")");

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
  point.bucket = {size_bucket(n), 0, 0};
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
  if (dense) {
    const int pack = pack_for(p, operands, plan.tuning.config.vector_bytes);
    spec.fields[F::kPack] = pack;
    spec.fields[F::kDims] = 0;
    ElementwiseParams<0> params{};
    params.n = n;
    for (int k = 0; k < operands; ++k) {
      params.data[k] = p.scalar[k] ? nullptr : p.arrays[k]->data;
      params.scalar[k] = p.scalar_bits[k];
    }
    plan.grid[0] = grid_blocks(std::max<int64_t>(1, n / pack), threads, threads, device, waves);
    plan.regime = pack > 1 ? "dense, packed" : "dense";
    plan.set_params(params);
    return true;
  }
  const int dims = s.ndim <= 3 ? s.ndim : kMaxDims;
  spec.fields[F::kPack] = 1;
  spec.fields[F::kDims] = dims;
  plan.grid[0] = grid_blocks(n, threads, threads, device, waves);
  plan.regime = "strided";
  auto fill = [&](auto& params) {
    params.n = n;
    params.ndim = s.ndim;
    for (int d = 0; d < s.ndim; ++d) params.sizes[d] = s.sizes[d];
    for (int k = 0; k < operands; ++k) {
      params.data[k] = p.scalar[k] ? nullptr : p.arrays[k]->data;
      params.scalar[k] = p.scalar_bits[k];
      for (int d = 0; d < s.ndim; ++d) params.strides[k][d] = s.strides[k][d];
    }
    plan.set_params(params);
  };
  switch (dims) {
    case 1: { ElementwiseParams<1> q{}; fill(q); break; }
    case 2: { ElementwiseParams<2> q{}; fill(q); break; }
    case 3: { ElementwiseParams<3> q{}; fill(q); break; }
    default: { ElementwiseParams<kMaxDims> q{}; fill(q); break; }
  }
  return true;
}

}  // namespace jitops
