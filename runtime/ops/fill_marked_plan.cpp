#include "runtime/ops/fill_marked_plan.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "jit/scatter_source.h"
#include "jitops/fill_marked_params.h"
#include "jitops/scatter_params.h"
#include "runtime/int_math.h"
#include "runtime/launch_shape.h"

namespace jitops {
namespace {

constexpr int64_t kMaxMarks = 16384;  // a block's marks, a byte each: 16 KB of shared memory
constexpr int kThreads = 256;
constexpr int kWaves = 2;  // the grid: blocks for 2 full waves, each marking once, then looping
constexpr int64_t kMinFlatBytes = int64_t(1) << 24;  // self's bytes for the flat walk (flat_unit_elements)
constexpr int64_t kInt32Limit = int64_t(1) << 31;
std::atomic<int> g_mode{-1};

enum { kSelf = 0, kMark = 1 };

// Self's dims with the axis's own size and stride, a second operand giving
// the position along the axis; in memory order, collapsed (the axis never
// merges with another dim: its mark stride breaks the run).
IterationSpace marked_space(const ScatterProblem& p) {
  IterationSpace s;
  s.operands = 2;
  s.ndim = p.space.ndim;
  for (int d = 0; d < s.ndim; ++d) {
    const bool axis = d == p.axis_dim;
    s.sizes[d] = axis ? p.axis_size : p.space.sizes[d];
    s.strides[kSelf][d] = axis ? p.axis_stride : p.space.strides[kSelfOperand][d];
    s.strides[kMark][d] = axis ? 1 : 0;
  }
  const int priority[] = {kSelf};
  int order[kMaxDims + 16];
  memory_order(s, priority, 1, order);
  permute_dims(s, order);
  collapse(s);
  return s;
}

// Elements a unit: the widest vector (up to 16 bytes) that the innermost dim
// (stride 1) splits into, every other stride and the pointer aligned to.
int unit_elements(const IterationSpace& s, const ScatterProblem& p) {
  const int inner = s.ndim - 1;
  if (s.strides[kSelf][inner] != 1) return 1;
  for (int d = 0; d < s.ndim; ++d)
    if (s.strides[kSelf][d] < 0) return 1;
  int vec = 16 / p.element_bytes;
  auto fits = [&](int v) {
    if (s.sizes[inner] % v != 0 || reinterpret_cast<uintptr_t>(p.self) % uintptr_t(v * p.element_bytes) != 0)
      return false;
    for (int d = 0; d < inner; ++d)
      if (s.strides[kSelf][d] % v != 0) return false;
    return true;
  };
  while (vec > 1 && !fits(vec)) vec /= 2;
  return vec;
}

// Elements a unit of the flat walk (0: none): self's rows of the axis's positions back to back (the axis
// innermost, rows contiguous), the rows allowing only small units (13 bytes a row: units of 1), so the walk
// takes units of up to 16 bytes across the rows' seams instead. A partly marked unit is read before it is
// written, where a row's elements were only written: it pays for units of 8 elements or more, 4 times the
// rows' at least, over a self of 16 MB or more. Of 392 sweep plans of seeds 100-1900 that any flat walk
// changes (H100, NOTES 101), the 82 this takes ran 1.55x faster in geomean (seed 1827's uint8
// (10193221x13) 206 -> 107 us, PyTorch 181; a bool (8627947x13) 174 -> 86); units of 2 elements lost up to
// 2.1x (a complex64 (9x41229x16) transposed, 32 -> 68 us), and under 16 MB the read's wait cost 1-2 us of
// 8-15 us calls.
int flat_unit_elements(const IterationSpace& s, const ScatterProblem& p, int row_vec) {
  if (s.ndim != 2 || s.strides[kMark][0] != 0 || s.strides[kMark][1] != 1 || s.strides[kSelf][1] != 1 ||
      s.strides[kSelf][0] != s.sizes[1] || s.numel() * p.element_bytes < kMinFlatBytes)
    return 0;
  int vec = 16 / p.element_bytes;
  while (vec > row_vec && reinterpret_cast<uintptr_t>(p.self) % uintptr_t(vec * p.element_bytes) != 0) vec /= 2;
  return vec >= 8 && vec >= 4 * row_vec ? vec : 0;
}

bool fits_32bit(const IterationSpace& s) {
  return s.numel() < kInt32Limit && s.max_offset(kSelf) < kInt32Limit;
}

template <int Bits, int Dims>
void fill_params(const ScatterProblem& p, const IterationSpace& s, int vec, bool flat, int64_t index_count,
                 int64_t index_stride, IndexErrorSlot* slot, LaunchPlan& plan) {
  typedef FillMarkedParams<Bits, Dims> Params;
  typedef typename Params::Stride Stride;
  Params params;
  std::memset(&params, 0, sizeof(params));
  params.self = p.self;
  params.index = p.index;
  params.error = slot;
  params.units = typename Params::Linear(s.numel() / vec);
  params.index_count = index_count;
  params.index_stride = index_stride;
  params.axis_size = p.axis_size;
  params.op_code = p.op_code;
  const int inner = s.ndim - 1;
  params.marks_inner = s.strides[kMark][inner] != 0;
  std::memcpy(params.value, p.value, sizeof(params.value));
  params.period = typename Params::Divider(flat ? uint64_t(s.sizes[inner]) : 1);
  params.elements = typename Params::Linear(flat ? s.numel() : 0);
  if (flat) {
    params.sizes[0] = typename Params::Divider(1);
    params.self_strides[0] = Stride(vec);
    params.mark_strides[0] = 0;
    plan.set_params(params);
    return;
  }
  for (int d = 0; d < Dims; ++d) {
    const bool used = d < s.ndim;
    const int64_t per_unit = d == inner ? vec : 1;
    params.sizes[d] = typename Params::Divider(used ? s.sizes[d] / per_unit : 1);
    params.self_strides[d] = used ? Stride(s.strides[kSelf][d] * per_unit) : 0;
    params.mark_strides[d] = used ? Stride(s.strides[kMark][d] * per_unit) : 0;
  }
  plan.set_params(params);
}

// Bytes the index walk writes side by side for one value: the run of self
// beside the axis, innermost and contiguous (an element where the axis is
// innermost or self is strided there).
int64_t run_bytes(const IterationSpace& s, const ScatterProblem& p) {
  const int inner = s.ndim - 1;
  if (s.strides[kMark][inner] != 0 || s.strides[kSelf][inner] != 1) return p.element_bytes;
  return s.sizes[inner] * p.element_bytes;
}

// Where the pass pays (H100, NOTES 100; 211 sweep plans of seeds 100-3300, both ways):
// - pieces: the walk's stores are pieces of sectors (runs under 32 bytes beside
//   the axis) and the index names a quarter of the axis or more, 3 values at
//   least: seed 1810's int8 (4x369x256x16) along dim 3 by 36 values 52.3 ->
//   9.7 us (PyTorch 38.2). With 1 or 2 values the walk stores no more than
//   the pass, which reads every mark (float64 (8388608x4) sliced, one value:
//   233.7 -> 349.8), and with fewer values the pass touches all of self for
//   little (uint8 (593629x55) by 4: 33.1 -> 47.1);
// - repeats: 1.5 values a position or more, where the walk writes each
//   position as often as it is named, whole rows or not (int64 (57x1048576x1)
//   by 3 values of 1: 486.0 -> 154.4, PyTorch 565.2);
// - not where self is the axis alone (the walk stores each value once), and
//   only where each block's reading of the index (every block reads it all)
//   stays under its share of self's elements (int64 (16384x128) by 49983
//   values of 16384: 18.4 -> 141.3).
// Sorted values under the pieces rule lose a little (int64 (2x8192x32) sliced,
// 16 sorted values of 32: 6.2 -> 8.3 us); the planner cannot tell them apart.
// The counts' part of the rule, tested before any space is built (every index_fill_ call plans).
bool enough_values(const ScatterProblem& p, int64_t index_count) {
  return (index_count >= 3 && 4 * index_count >= p.axis_size) || 2 * index_count >= 3 * p.axis_size;
}

// The rest of the rule, once enough_values() holds (the pieces' counts hold unless the repeats' do).
bool pays(const IterationSpace& s, const ScatterProblem& p, int64_t index_count, int64_t blocks) {
  if (g_mode.load() == 1) return true;
  const bool repeats = 2 * index_count >= 3 * p.axis_size;
  const bool pieces = run_bytes(s, p) < 32;
  const bool axis_alone = s.ndim == 1 && s.strides[kMark][0] != 0;  // the walk stores each value once already
  return (pieces || repeats) && !axis_alone && blocks * (index_count + 64) <= s.numel();
}

}  // namespace

void set_fill_marked_mode(int mode) { g_mode = mode; }

bool plan_fill_marked(const ScatterProblem& p, const DeviceInfo& device, IndexErrorSlot* error_slot,
                      LaunchPlan& plan) {
  if (p.op != kScatterFill || g_mode.load() == 0 || p.axis_dim < 0) return false;
  if (p.axis_size < 1 || p.axis_size > kMaxMarks) return false;
  const int64_t index_count = p.space.sizes[p.axis_dim];
  if (g_mode.load() != 1 && !enough_values(p, index_count)) return false;
  const IterationSpace s = marked_space(p);
  if (s.ndim > 3) return false;
  const int64_t index_stride = p.space.strides[kIndexOperand][p.axis_dim];
  const int row_vec = unit_elements(s, p);
  const int flat_vec = flat_unit_elements(s, p, row_vec);
  const bool flat = flat_vec > 0;
  const int vec = flat ? flat_vec : row_vec;
  const int64_t units = s.numel() / vec;
  const int64_t most = int64_t(device.sm_count) * (device.max_threads_per_sm / kThreads) * kWaves;
  const int64_t blocks = std::min<int64_t>(most, ceil_div(units, kThreads));
  if (!pays(s, p, index_count, blocks)) return false;

  const int bits = fits_32bit(s) ? 32 : 64;
  const int dims = flat ? 1 : s.ndim;
  plan.spec = scatter_spec(p.element, p.index_bytes, dims, bits, kScatterFillMarked, vec, 1, kThreads);
  plan.regime = flat ? "marked pass over self, units across its rows" : "marked pass over self";
  plan.tunable = false;
  plan.tuning = ResolvedTuning();
  with_param_dims(dims, [&](auto d) {
    if (bits == 32)
      fill_params<32, decltype(d)::value>(p, s, vec, flat, index_count, index_stride, error_slot, plan);
    else
      fill_params<64, decltype(d)::value>(p, s, vec, flat, index_count, index_stride, error_slot, plan);
  });
  plan.block[0] = kThreads;
  plan.grid[0] = unsigned(blocks);
  plan.shared_bytes = unsigned((p.axis_size + (flat ? vec : 0) + 15) / 16 * 16);  // the flat walk's marks again
  return true;
}

}  // namespace jitops
