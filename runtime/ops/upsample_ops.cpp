#include "runtime/ops/upsample_ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

#include "jit/upsample_source.h"
#include "jitops/upsample_params.h"
#include "runtime/arg_error.h"
#include "runtime/int_math.h"
#include "runtime/launch_shape.h"
#include "runtime/ops/upsample_tiles_plan.h"

namespace jitops {
namespace {

constexpr int64_t kInt32Limit = int64_t(1) << 31;
std::atomic<bool> g_fitted_rows{true};
enum : int { kN = 0, kC = 1, kH = 2, kW = 3 };

int64_t max_offset(const TensorDesc& t) {
  int64_t m = 0;
  for (int d = 0; d < t.ndim; ++d) m += (t.shape[d] - 1) * (t.strides[d] < 0 ? -t.strides[d] : t.strides[d]);
  return m;
}

bool fits_32bit(const TensorDesc& a, const TensorDesc& b) {
  return a.numel() < kInt32Limit && b.numel() < kInt32Limit && max_offset(a) < kInt32Limit &&
         max_offset(b) < kInt32Limit;
}

// The four dims of `t` ordered outermost first by its strides (a stable sort,
// so NCHW stays NCHW and channels-last becomes N, H, W, C).
std::array<int, 4> memory_order(const TensorDesc& t) {
  std::array<int, 4> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const int64_t sa = t.shape[a] == 1 ? 0 : std::abs(t.strides[a]), sb = t.shape[b] == 1 ? 0 : std::abs(t.strides[b]);
    return sa > sb;
  });
  return order;
}

// The generic layout: iterate over `walked` (the tensor written) in its memory
// order; `other` is read at the same N, C and mapped H, W.
template <int Bits>
void fill_generic(const TensorDesc& walked, const TensorDesc& other, UpsampleParams<Bits>& p) {
  typedef typename UpsampleParams<Bits>::Divider D;
  typedef typename UpsampleParams<Bits>::Stride S;
  const std::array<int, 4> order = memory_order(walked);
  for (int pos = 0; pos < 4; ++pos) {
    const int d = order[pos];
    p.sizes[pos] = D(typename UpsampleParams<Bits>::Linear(walked.shape[d]));
    p.dst_strides[pos] = S(walked.strides[d]);
    p.src_strides[pos] = S(other.strides[d]);
    if (d == kH) p.h_pos = pos;
    if (d == kW) p.w_pos = pos;
  }
  p.work = typename UpsampleParams<Bits>::Linear(walked.numel());
}

template <int Bits>
void fill_2x(int64_t rows, int64_t width, int vec, UpsampleParams<Bits>& p) {
  typedef typename UpsampleParams<Bits>::Linear L;
  p.work = L(rows * (width / vec));
  p.row_groups = typename UpsampleParams<Bits>::Divider(L(width / vec));
  p.width = typename UpsampleParams<Bits>::Stride(width);
}

// Elements per item of a 2x kernel: the widest whose packs stay within 16
// bytes (`wide_bytes` per element on the doubled side) and stay aligned.
int vec_for_2x(int64_t width, int element_bytes, const void* narrow, const void* wide) {
  int vec = 8 / element_bytes;
  while (vec > 1 && (width % vec != 0 || reinterpret_cast<uintptr_t>(narrow) % uintptr_t(vec * element_bytes) != 0 ||
                     reinterpret_cast<uintptr_t>(wide) % uintptr_t(2 * vec * element_bytes) != 0))
    vec /= 2;
  return std::max(vec, 1);
}

// The heuristic's grid cap, in waves: 64 where `bytes` (what the measurements
// counted, per kernel kind) reach 8 L2s, else the default 16. A grid-stride
// thread then loops over fewer items; below that size more blocks lost (each
// pays its thread's setup; NOTES 92).
int waves_for(int64_t bytes, const DeviceInfo& device) {
  return bytes >= 8 * device.l2_bytes ? 64 : LaunchTuning().waves;
}

// `unroll`: the heuristic's items per thread for this kernel kind; `waves` its grid cap.
template <int Bits>
void finish_plan(UpsampleParams<Bits>& p, int unroll, int waves, const DeviceInfo& device, LaunchPlan& plan) {
  using F = UpsampleSpecFields;
  TuningPoint point;
  point.family = KernelFamily::Upsample;
  point.traits = {plan.spec.fields[F::kKind], plan.spec.fields[F::kElement], plan.spec.fields[F::kVec], Bits, 0, 0};
  point.bucket = {size_bucket(int64_t(p.work)), 0, 0};
  LaunchTuning heuristic;
  heuristic.unroll = unroll;
  heuristic.waves = waves;
  plan.tuning = resolve_tuning(point, device, heuristic);
  plan.tunable = true;
  const LaunchTuning& tuning = plan.tuning.config;
  plan.block[0] = unsigned(tuning.threads);
  plan.spec.fields[F::kMaxThreads] = tuning.threads;
  plan.spec.fields[F::kUnroll] = tuning.unroll;
  plan.grid[0] =
      grid_blocks(int64_t(p.work), int64_t(tuning.threads) * tuning.unroll, tuning.threads, device, tuning.waves);
  plan.set_params(p);
}

// The backward row kernel keeps, for each element a thread holds, its window's
// bounds and channel (about 3 registers) and its window's loads in flight (one
// register each, two for 8-byte elements). Holding up to 32 loads a thread,
// it took 100-226 registers (1-2 blocks an SM, 20% of warps active) and lost
// to PyTorch; within this budget it takes 40-68, and 123 cases of sweep seeds
// 40-99 whose plan it changed ran 1.27x faster in geomean (NOTES 74).
constexpr int kBackwardHeldRegisters = 32;

int backward_element_registers(int window_loads, int element_bytes) {
  return 3 + std::max(1, window_loads) * std::max(1, element_bytes / 4);
}

// The row kernels (templates/upsample_rows.cuh) for a dense NCHW or
// channels-last `dst`; false for any other layout of it.
template <int Bits>
bool plan_rows(bool forward, const TensorDesc& src, const TensorDesc& dst, const UpsampleGeometry& g,
               const DeviceInfo& device, LaunchPlan& plan) {
  using F = UpsampleSpecFields;
  typedef typename UpsampleRowParams<Bits>::Divider D;
  typedef typename UpsampleRowParams<Bits>::Stride S;
  typedef typename UpsampleRowParams<Bits>::Linear L;
  const bool nchw = dst.is_contiguous();
  if (!nchw && !is_channels_last(dst)) return false;
  // Rows run over W (NCHW) or W x C (channels-last); the dims before them number the rows.
  const int64_t channels = nchw ? 1 : dst.shape[kC];
  const int64_t inner = dst.shape[kW] * channels;
  if (inner >= (int64_t(1) << 31) || dst.numel() == 0) return false;
  const int outer[3] = {nchw ? kN : -1, nchw ? kC : kN, kH};
  UpsampleRowParams<Bits> p{};
  p.src = src.data;
  p.dst = dst.data;
  p.inner = int32_t(inner);
  p.rows = L(dst.numel() / inner);
  p.outer_sizes[0] = D(L(dst.shape[outer[1]]));
  p.outer_sizes[1] = D(L(dst.shape[outer[2]]));
  for (int i = 0; i < 3; ++i) p.src_outer[i] = outer[i] < 0 ? S(0) : S(src.strides[outer[i]]);
  p.channels = FastDivmod(uint32_t(channels));
  p.src_w = S(src.strides[kW]);
  p.src_c = S(src.strides[kC]);
  p.src_h = int32_t(forward ? g.in_h : g.out_h);
  p.src_width = int32_t(forward ? g.in_w : g.out_w);
  p.scale_h = forward ? g.forward_scale_h : g.backward_scale_h;
  p.scale_w = forward ? g.forward_scale_w : g.backward_scale_w;
  // Elements a thread stores at once: the widest 16-byte-or-less pack that divides the row and keeps dst aligned.
  const int bytes = dst.element_bytes();
  int vec = 16 / bytes;
  while (vec > 1 && (inner % vec != 0 || reinterpret_cast<uintptr_t>(dst.data) % uintptr_t(vec * bytes) != 0)) vec /= 2;
  // A pack that stays within one pixel's channels reads the source in packs where those are dense and aligned.
  bool src_packed = forward && !nchw && vec > 1 && channels % vec == 0 && src.strides[kC] == 1 &&
                    reinterpret_cast<uintptr_t>(src.data) % uintptr_t(vec * bytes) == 0;
  for (int d : {kN, kH, kW}) src_packed = src_packed && src.strides[d] % vec == 0;
  plan.spec.fields[F::kKind] = forward ? kUpsampleRowsForward : kUpsampleRowsBackward;
  plan.spec.fields[F::kVec] = vec;
  plan.spec.fields[F::kNchwRows] = nchw;
  plan.spec.fields[F::kSrcPacked] = src_packed;
  int held_per_element = 1;  // registers each element a thread holds costs (backward)
  if (!forward) {
    plan.spec.fields[F::kWindowH] = widest_window(p.scale_h, g.in_h);
    plan.spec.fields[F::kWindowW] = widest_window(p.scale_w, g.in_w);
    held_per_element = backward_element_registers(plan.spec.fields[F::kWindowH] * plan.spec.fields[F::kWindowW], bytes);
    while (vec > 1 && vec * held_per_element > kBackwardHeldRegisters) vec /= 2;
    plan.spec.fields[F::kVec] = vec;
  }
  plan.regime = nchw ? "rows of W, mapped once per thread" : "rows of W x C (channels-last), mapped once per thread";
  const int64_t groups = inner / vec;
  TuningPoint point;
  point.family = KernelFamily::Upsample;
  point.traits = {plan.spec.fields[F::kKind], plan.spec.fields[F::kElement], vec, Bits, nchw, src_packed};
  point.bucket = {size_bucket(dst.numel()), size_bucket(groups), 0};
  LaunchTuning heuristic;
  heuristic.unroll = groups >= 128 ? 4 : groups >= 64 ? 2 : 1;  // groups a thread holds, sharing each row's index math
  // More waves where dst reaches 8 L2s. At 16 waves sweep seed 903's float32
  // backward (1 GB, ~13 rows a thread) took 894 us, at 64 710 (PyTorch 717);
  // the rows plans of seeds 100-199 past 400 MB ran 1.05x faster (none
  // slower), and the 78 plans it changes on seeds 200-699, unseen while
  // choosing, 1.04x (one 4.5% slower). Below that size more waves lost up to
  // 0.66x: a thread maps its columns once, and more blocks pay it more often.
  heuristic.waves = waves_for(dst.numel() * bytes, device);
  plan.tuning = resolve_tuning(point, device, heuristic);
  plan.tunable = true;
  const LaunchTuning& tuning = plan.tuning.config;
  // Registers hold each element's mapping: at most 32 source offsets forward, the budget's worth backward.
  int cols = std::max(1, std::min(tuning.unroll, 32 / vec));
  while (!forward && cols > 1 && cols * vec * held_per_element > kBackwardHeldRegisters) cols /= 2;
  unsigned bx = 0, by = 0;
  int64_t gx = 0;
  for (;;) {  // the heuristic gives up columns a thread while the grid would leave SMs idle
    bx = std::min(32u, unsigned(pow2_at_least((groups + cols - 1) / cols)));
    by = std::max(1u, unsigned(tuning.threads) / bx);
    gx = (groups + int64_t(bx) * cols - 1) / (int64_t(bx) * cols);
    const int64_t blocks = gx * ((int64_t(p.rows) + by - 1) / by);
    if (!tuning.adapt_unroll || cols == 1 || blocks >= 2 * int64_t(device.sm_count)) break;
    cols /= 2;
  }
  // A row of groups that a power of two of lanes leaves over a quarter idle
  // (41 columns in 64 lanes) takes the fewest equal parts instead, the block's
  // warps spanning rows (no warp-wide step in the row kernels), as gathers'
  // pack_short_rows and the accumulate family's fit_block_columns do. H100,
  // NOTES 104: 181 of the 3628 sweep plans of seeds 100-1900 it would change,
  // drawn at random, both ways in one build; kept where it paid: 1.11x in
  // geomean over 105 plans, 0.94x-1.45x, below 0.97x of PyTorch 4 -> 0 (seed
  // 1842's bfloat16 (1x128x152x49) to (329, 41) 13.3 -> 10.7 us, PyTorch
  // 12.2; 142's uint8 x1.5 41.1 -> 28.3). Calls of under two blocks an SM of
  // threads keep their shape (0.96x: fewer, fuller blocks cost them ~0.5 us),
  // as do float64 rows (31 plans 0.98x; seed 731's (8x128x95x212) to (176,
  // 181) 168.8 -> 192.4 us).
  const bool few_threads = int64_t(p.rows) * ceil_div(groups, cols) < int64_t(2) * device.sm_count * tuning.threads;
  const int64_t block_width = int64_t(bx) * cols, fitted = fitted_width(groups, block_width);  // in groups
  if (g_fitted_rows.load(std::memory_order_relaxed) && !few_threads && bytes < 8 && fitted < block_width) {
    bx = unsigned(ceil_div(fitted, cols));
    by = std::max(1u, unsigned(tuning.threads) / bx);
  }
  const unsigned blocks = grid_blocks(int64_t(p.rows) * gx, by, int(bx * by), device, tuning.waves);
  const int64_t gy = std::min<int64_t>({65535, (int64_t(p.rows) + by - 1) / by,
                                        std::max<int64_t>(1, blocks / std::max<int64_t>(1, gx))});
  plan.spec.fields[F::kMaxThreads] = int(bx * by);
  plan.spec.fields[F::kUnroll] = cols;
  plan.block[0] = bx;
  plan.block[1] = by;
  plan.grid[0] = unsigned(gx);
  plan.grid[1] = unsigned(std::max<int64_t>(1, gy));
  plan.set_params(p);
  return true;
}

template <int Bits>
bool plan_with_bits(bool forward, const TensorDesc& src, const TensorDesc& dst, const UpsampleGeometry& g,
                    const DeviceInfo& device, LaunchPlan& plan) {
  using F = UpsampleSpecFields;
  UpsampleParams<Bits> p{};
  p.src = src.data;
  p.dst = dst.data;
  plan.spec = KernelSpec();
  plan.spec.family = KernelFamily::Upsample;
  plan.spec.fields[F::kOffsetBits] = Bits;
  const int bytes = src.element_bytes();
  plan.spec.fields[F::kElement] = forward ? bytes : int(src.dtype);
  const bool exact_2x = g.out_h == 2 * g.in_h && g.out_w == 2 * g.in_w &&
                        (forward ? g.forward_scale_h == 0.5f && g.forward_scale_w == 0.5f
                                 : g.backward_scale_h == 2.0f && g.backward_scale_w == 2.0f);
  if (exact_2x && src.is_contiguous() && dst.is_contiguous()) {
    const int64_t width = g.in_w, rows = (forward ? src : dst).numel() / std::max<int64_t>(1, g.in_w);
    const int vec = forward ? vec_for_2x(width, bytes, src.data, dst.data) : vec_for_2x(width, bytes, dst.data, src.data);
    plan.spec.fields[F::kKind] = forward ? kUpsampleForward2x : kUpsampleBackward2x;
    plan.spec.fields[F::kVec] = vec;
    plan.regime = "exact 2x, packed pairs";
    fill_2x(rows, width, vec, p);
    // Backward, 2 packs a thread: at 4, bfloat16 packs of 4 took 79 registers; 166 cases of sweep seeds 40-99
    // ran 1.02x faster in geomean at 2 (bfloat16 up to 1.29x), 1.03x at 1 but large 16-bit ones up to 15% slower.
    // More waves where the bytes read and written reach 8 L2s: the 71 such capped plans of seeds 100-699 ran
    // 1.009x faster in geomean at 64 waves, 0.994x-1.052x (1.010x on the 39 of seeds 400-699, held out).
    finish_plan(p, forward ? 4 : 2, waves_for((src.numel() + dst.numel()) * bytes, device), device, plan);
    return true;
  }
  if (!forward && plan_upsample_tiles<Bits>(src, dst, g, device, plan)) return true;
  if (plan_rows<Bits>(forward, src, dst, g, device, plan)) return true;
  plan.spec.fields[F::kKind] = forward ? kUpsampleForward : kUpsampleBackward;
  plan.spec.fields[F::kVec] = 1;
  plan.regime = forward ? "generic gather" : "generic window sum (deterministic)";
  if (forward) {
    fill_generic(dst, src, p);
    p.src_h = int32_t(g.in_h);
    p.src_w = int32_t(g.in_w);
    p.scale_h = g.forward_scale_h;
    p.scale_w = g.forward_scale_w;
  } else {
    fill_generic(dst, src, p);  // walks the input gradient; reads the output gradient
    p.src_h = int32_t(g.out_h);
    p.src_w = int32_t(g.out_w);
    p.scale_h = g.backward_scale_h;
    p.scale_w = g.backward_scale_w;
  }
  finish_plan(p, forward ? 4 : 1, LaunchTuning().waves, device, plan);
  return true;
}

bool plan_upsample(bool forward, const TensorDesc& src, const TensorDesc& dst, const UpsampleGeometry& g,
                   const DeviceInfo& device, LaunchPlan& plan) {
  if (dst.numel() == 0) return false;
  if (g.out_h >= kInt32Limit || g.out_w >= kInt32Limit)
    throw value_error("size: output height and width must be below 2^31 (got " + std::to_string(g.out_h) + ", " +
                      std::to_string(g.out_w) + ")");
  if (fits_32bit(src, dst)) return plan_with_bits<32>(forward, src, dst, g, device, plan);
  return plan_with_bits<64>(forward, src, dst, g, device, plan);
}

}  // namespace

UpsampleGeometry upsample_geometry(int64_t in_h, int64_t in_w, const std::optional<std::array<int64_t, 2>>& size,
                                   const std::optional<std::array<double, 2>>& scale_factor) {
  if (size.has_value() == scale_factor.has_value())
    throw value_error(std::string("size: expected exactly one of size and scale_factor (got ") +
                      (size ? "both" : "neither") + ")");
  UpsampleGeometry g;
  g.in_h = in_h;
  g.in_w = in_w;
  if (size) {
    g.out_h = (*size)[0];
    g.out_w = (*size)[1];
    if (g.out_h <= 0 || g.out_w <= 0)
      throw value_error("size: expected positive sizes (got (" + std::to_string(g.out_h) + ", " +
                        std::to_string(g.out_w) + "))");
    g.forward_scale_h = float(in_h) / float(g.out_h);
    g.forward_scale_w = float(in_w) / float(g.out_w);
    g.backward_scale_h = in_h > 0 ? float(g.out_h) / float(in_h) : 0.f;
    g.backward_scale_w = in_w > 0 ? float(g.out_w) / float(in_w) : 0.f;
  } else {
    const double sh = (*scale_factor)[0], sw = (*scale_factor)[1];
    if (!(sh > 0) || !(sw > 0) || !std::isfinite(sh) || !std::isfinite(sw))
      throw value_error("scale_factor: expected positive finite scales (got (" + std::to_string(sh) + ", " +
                        std::to_string(sw) + "))");
    g.out_h = int64_t(std::floor(double(in_h) * sh));
    g.out_w = int64_t(std::floor(double(in_w) * sw));
    if ((g.out_h <= 0 && in_h > 0) || (g.out_w <= 0 && in_w > 0))
      throw value_error("scale_factor: the output would be empty (input " + std::to_string(in_h) + "x" +
                        std::to_string(in_w) + ", scale " + std::to_string(sh) + ", " + std::to_string(sw) + ")");
    g.forward_scale_h = float(1.0 / sh);
    g.forward_scale_w = float(1.0 / sw);
    g.backward_scale_h = float(sh);
    g.backward_scale_w = float(sw);
  }
  return g;
}

void check_upsample_operand(const TensorDesc& x, const char* name) {
  if (x.ndim != 4)
    throw value_error(std::string(name) + ": expected a 4-d array (N, C, H, W) (got shape " + shape_str(x) + ")");
  switch (x.dtype) {
    case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64: case DType::UInt8: return;
    default:
      throw type_error(std::string(name) + ": upsample_nearest2d supports float16, bfloat16, float32, float64 and "
                       "uint8 (got " + dtype_info(x.dtype).name + ")");
  }
}

bool is_channels_last(const TensorDesc& t) {
  if (t.ndim != 4 || t.is_contiguous()) return false;
  int64_t expected = 1;
  for (int d : {kC, kW, kH, kN}) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

bool plan_upsample_forward(const TensorDesc& x, const TensorDesc& out, const UpsampleGeometry& g,
                           const DeviceInfo& device, LaunchPlan& plan) {
  return plan_upsample(true, x, out, g, device, plan);
}

bool plan_upsample_backward(const TensorDesc& grad_output, const TensorDesc& grad_input, const UpsampleGeometry& g,
                            const DeviceInfo& device, LaunchPlan& plan) {
  return plan_upsample(false, grad_output, grad_input, g, device, plan);
}

bool set_upsample_fitted_rows(bool on) { return g_fitted_rows.exchange(on); }

}  // namespace jitops
