#include "runtime/ops/reduction_plan.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "runtime/collapse.h"
#include "runtime/int_math.h"
#include "runtime/tuning.h"

namespace jitops {
namespace {

using F = ReductionSpecFields;

int next_pow2(int64_t n) {
  int p = 1;
  while (p < n && p < (1 << 30)) p <<= 1;
  return p;
}

// The kept dims (operands: the inputs, then the output) and the reduced dims
// (the inputs), each collapsed; reduced dims ordered by the first input's
// layout, since the order they are folded in is free.
void split_spaces(const ReductionProblem& pr, IterationSpace& o, IterationSpace& r) {
  o.ndim = r.ndim = 0;
  o.operands = pr.inputs + 1;
  r.operands = pr.inputs;
  int kept = 0;
  for (int d = 0; d < pr.ndim; ++d) {
    IterationSpace& s = pr.reduced[d] ? r : o;
    s.sizes[s.ndim] = pr.shape[d];
    for (int k = 0; k < pr.inputs; ++k) {
      const TensorDesc& t = *pr.in[k];
      const int td = d - (pr.ndim - t.ndim);  // numpy broadcasting aligns the trailing dims
      s.strides[k][s.ndim] = td < 0 || t.shape[td] == 1 ? 0 : t.strides[td];
    }
    if (!pr.reduced[d]) o.strides[pr.inputs][o.ndim] = pr.out_strides[kept++];
    ++s.ndim;
  }
  collapse(o);
  if (r.ndim == 0) {  // nothing reduced: one position
    r.ndim = 1;
    r.sizes[0] = 1;
    for (int k = 0; k < pr.inputs; ++k) r.strides[k][0] = 0;
  }
  const int first = 0;
  order_by_memory(r, &first, 1);
  collapse(r);
}

bool fits_32_bits(const IterationSpace& o, const IterationSpace& r, int inputs) {
  constexpr int64_t kLimit = (int64_t(1) << 31) - 1;
  if (o.numel() > kLimit || r.numel() > kLimit) return false;
  for (int k = 0; k <= inputs; ++k) {
    int64_t reach = o.max_offset(k);
    if (k < inputs) reach += r.max_offset(k);
    if (reach > kLimit) return false;
  }
  return true;
}

// The widest vector (elements) every input can load along `dim` of `space`
// (dense there, aligned, and the other strides multiples of it).
int vector_width(const ReductionProblem& pr, const IterationSpace& space, int dim, const IterationSpace& other,
                 bool output_dense) {
  int widest = 16;
  for (int k = 0; k < pr.inputs; ++k) {
    if (space.strides[k][dim] != 1) return 1;
    widest = std::min(widest, 16 / dtype_info(pr.dtypes[k]).bytes());
  }
  if (output_dense && space.strides[pr.inputs][dim] != 1) return 1;
  for (int v = widest; v > 1; v /= 2) {
    bool ok = space.sizes[dim] % v == 0;
    for (int k = 0; k < pr.inputs && ok; ++k) {
      ok = reinterpret_cast<uintptr_t>(pr.in[k]->data) % (uintptr_t(v) * dtype_info(pr.dtypes[k]).bytes()) == 0;
      for (int d = 0; d < space.ndim && ok; ++d) ok = d == dim || space.sizes[d] == 1 || space.strides[k][d] % v == 0;
      for (int d = 0; d < other.ndim && ok; ++d) ok = other.sizes[d] == 1 || other.strides[k][d] % v == 0;
    }
    if (ok) return v;
  }
  return 1;
}

template <int Bits>
void fill_params(const ReductionProblem& pr, const IterationSpace& o, const IterationSpace& r, int64_t per_split,
                 int splits, LaunchPlan& plan) {
  ReductionParams<Bits> p{};
  typedef typename ReductionParams<Bits>::Divider Divider;
  typedef typename ReductionParams<Bits>::Stride Stride;
  typedef typename ReductionParams<Bits>::Linear Linear;
  for (int k = 0; k < pr.inputs; ++k) p.in[k] = pr.in[k]->data;
  p.out = pr.out->data;
  p.partial = nullptr;
  p.outputs = Linear(o.numel());
  p.reduced = Linear(r.numel());
  p.per_split = Linear(per_split);
  p.splits = splits;
  int64_t in_size = 1;
  for (int d = 0; d < pr.ndim; ++d) in_size *= pr.shape[d];
  p.in_size = in_size;
  p.o_ndim = o.ndim;
  p.r_ndim = r.ndim;
  for (int d = 0; d < o.ndim; ++d) {
    p.o_div[d] = Divider(std::max<int64_t>(1, o.sizes[d]));
    for (int k = 0; k < pr.inputs; ++k) p.o_stride[k][d] = Stride(o.strides[k][d]);
    p.o_stride[kMaxReductionInputs][d] = Stride(o.strides[pr.inputs][d]);
  }
  for (int d = 0; d < r.ndim; ++d) {
    p.r_div[d] = Divider(std::max<int64_t>(1, r.sizes[d]));
    for (int k = 0; k < pr.inputs; ++k) p.r_stride[k][d] = Stride(r.strides[k][d]);
  }
  plan.set_params(p);
}

KernelSpec base_spec(const ReductionProblem& pr, int bits) {
  KernelSpec s;
  s.family = KernelFamily::Reduction;
  s.fields[F::kOperation] = pr.operation;
  s.fields[F::kInputs] = pr.inputs;
  uint32_t packed = 0;
  for (int k = 0; k < pr.inputs; ++k) packed |= uint32_t(pr.dtypes[k]) << (4 * k);
  packed |= uint32_t(pr.dtypes[pr.inputs]) << (4 * pr.inputs);
  packed |= uint32_t(pr.dtypes[pr.inputs + 1]) << (4 * (pr.inputs + 1));
  s.fields[F::kDTypes] = int32_t(packed);
  s.fields[F::kOffsetBits] = bits;
  return s;
}

}  // namespace

bool plan_reduction(const ReductionProblem& pr, const DeviceInfo& device, LaunchPlan (&plans)[2], int& count,
                    size_t& scratch_bytes) {
  count = 0;
  scratch_bytes = 0;
  IterationSpace o, r;
  split_spaces(pr, o, r);
  const int64_t outputs = o.numel(), reduced = r.numel();
  if (outputs == 0) return false;
  if (o.ndim > kMaxDims || r.ndim > kMaxDims)
    throw std::logic_error("reduction: more than 16 dims left after collapsing");
  const int bits = fits_32_bits(o, r, pr.inputs) ? 32 : 64;
  // Inner when the reduced dims are the faster ones in the first input.
  const int64_t r_stride = magnitude(r.strides[0][r.ndim - 1]);
  const int64_t o_stride = magnitude(o.strides[0][o.ndim - 1]);
  const bool inner = reduced > 1 && (outputs == 1 || (r_stride != 0 && (o_stride == 0 || r_stride < o_stride)));
  int vector = 1;
  if (inner && r.ndim == 1) vector = vector_width(pr, r, 0, o, false);
  if (!inner && o.sizes[o.ndim - 1] > 1) vector = vector_width(pr, o, o.ndim - 1, r, true);

  TuningPoint point;
  point.family = KernelFamily::Reduction;
  point.traits = {int32_t(reduction_operation_hash(pr.operation)), base_spec(pr, bits).fields[F::kDTypes],
                  inner ? 0 : 1, vector, r.ndim == 1 ? 1 : 0, 0};
  point.bucket = {size_bucket(outputs), size_bucket(reduced), 0};
  LaunchTuning heuristic;
  heuristic.threads = 256;
  heuristic.unroll = 4;
  heuristic.waves = 2;
  heuristic.adapt_unroll = false;
  LaunchPlan& main = plans[0];
  main.tunable = true;
  main.tuning = resolve_tuning(point, device, heuristic);
  const LaunchTuning& c = main.tuning.config;
  const int threads = std::max(32, std::min(1024, c.threads)), unroll = std::max(1, std::min(8, c.unroll));

  // Lanes per output (inner), blocks along the outputs, then splits of the
  // reduced dims until the grid holds `waves` of resident blocks.
  int group = 1, block = threads;
  int64_t blocks_x = 0, chunk = 0;  // chunk: reduced positions one block-row step covers
  if (inner) {
    group = std::min(next_pow2((reduced / vector + unroll - 1) / unroll), next_pow2(threads));
    block = std::max(group, threads);
    if (group > 32) block = group;  // groups past a warp take the whole block
    blocks_x = (outputs + block / group - 1) / (block / group);
    chunk = int64_t(group) * vector;
  } else {
    blocks_x = (outputs + 32 * vector - 1) / (32 * vector);
    chunk = threads / 32;
  }
  const int64_t resident = int64_t(device.sm_count) * std::max(1, device.max_threads_per_sm / block);
  const int64_t target = resident * std::max(1, c.waves);
  int64_t splits = 1;
  if (blocks_x < target && reduced > chunk * unroll * 2)
    splits = std::min((target + blocks_x - 1) / blocks_x, (reduced + chunk * unroll - 1) / (chunk * unroll));
  splits = std::min<int64_t>(splits, 65535);
  int64_t per_split = reduced;
  if (splits > 1) {
    per_split = (reduced + splits - 1) / splits;
    const int64_t align = inner ? int64_t(group) * vector : 1;
    per_split = (per_split + align - 1) / align * align;
    splits = (reduced + per_split - 1) / per_split;
  }
  if (per_split == 0) per_split = 1;
  const bool split = splits > 1;

  KernelSpec spec = base_spec(pr, bits);
  spec.fields[F::kStrategy] = inner ? kReduceInner : kReduceOuter;
  spec.fields[F::kReducedDims] = r.ndim == 1 ? 1 : 0;
  spec.fields[F::kVector] = vector;
  spec.fields[F::kGroup] = inner ? group : 0;
  spec.fields[F::kUnroll] = unroll;
  spec.fields[F::kSplit] = split ? 1 : 0;
  spec.fields[F::kMaxThreads] = block;
  main.spec = spec;
  main.regime = inner ? (split ? "inner, split" : "inner") : (split ? "outer, split" : "outer");
  main.grid[0] = unsigned(blocks_x);
  main.grid[1] = unsigned(splits);
  if (inner) {
    main.block[0] = unsigned(block);
  } else {
    main.block[0] = 32;
    main.block[1] = unsigned(threads / 32);
    main.shared_bytes = unsigned(threads / 32) * 32u * unsigned(vector) * unsigned(dtype_info(pr.dtypes[pr.inputs + 1]).bytes());
  }
  if (bits == 32) fill_params<32>(pr, o, r, per_split, int(splits), main);
  else fill_params<64>(pr, o, r, per_split, int(splits), main);
  count = 1;
  if (!split) return true;

  // The finish: groups of lanes fold each output's partial results.
  LaunchPlan& finish = plans[1];
  finish.spec = base_spec(pr, bits);
  const int finish_group = std::min(next_pow2((splits + 3) / 4), 256);
  const int finish_block = std::max(finish_group, 256);
  finish.spec.fields[F::kStrategy] = kReduceFinish;
  finish.spec.fields[F::kGroup] = finish_group;
  finish.spec.fields[F::kMaxThreads] = finish_block;
  finish.spec.fields[F::kReducedDims] = 0;
  finish.spec.fields[F::kVector] = 1;
  finish.spec.fields[F::kUnroll] = 1;
  finish.regime = "finish";
  finish.block[0] = unsigned(finish_block);
  finish.grid[0] = unsigned((outputs + finish_block / finish_group - 1) / (finish_block / finish_group));
  std::memcpy(finish.params, main.params, main.param_size);
  finish.param_size = main.param_size;
  scratch_bytes = size_t(splits) * size_t(outputs) * size_t(dtype_info(pr.dtypes[pr.inputs + 1]).bytes());
  count = 2;
  return true;
}

void set_reduction_scratch(LaunchPlan* plans, int count, void* scratch) {
  for (int i = 0; i < count; ++i) {
    // `partial` sits at the same place in both widths' parameter blocks (after the pointers).
    static_assert(offsetof(ReductionParams<32>, partial) == offsetof(ReductionParams<64>, partial),
                  "ReductionParams: partial moves with the offset width");
    std::memcpy(plans[i].params + offsetof(ReductionParams<32>, partial), &scratch, sizeof(scratch));
  }
}

}  // namespace jitops
