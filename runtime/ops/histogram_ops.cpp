#include "runtime/ops/histogram_ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "jit/histogram_source.h"
#include "jitops/histogram_params.h"
#include "runtime/arg_error.h"
#include "runtime/collapse.h"
#include "runtime/op_codes.h"

namespace jitops {
namespace {

constexpr int kThreads = 256;
// Up to 12288 values one block counts sooner than the memset launch and the
// last-block hand-off that several blocks need, or one cluster; past that its
// loads, a few in flight a thread on one SM, take longer (H100, float32, an
// explicit range, benchmarks/probes/histc_single_probe.py, NOTES 87): 8192
// values 6.6 us against 7.1 (cluster) and 7.1 (count kernel), 16384 7.8
// against 7.4 and 7.3, 32768 10.3 against 7.5 and 7.3 (PyTorch 8.9), 118
// bins; where it applies it comes before the cluster at any bins (2048
// values, 1000 bins: 5.8 against 7.5).
// Settable for measurement: set_histc_single_block_values.
std::atomic<int64_t> g_single_block_values{12288};
constexpr int64_t kStaticSharedReserve = 64;  // the count kernel's own __shared__
// One cluster (sm_90) reads up to 1 MiB of a dense x with its 8 blocks' loads
// in flight at once (8 packs of 16 bytes a thread); a strided x is read one
// element at a time (4 loads in flight), up to 16 values of 4 bytes or less a
// thread, 8 of 8 bytes (an 8-byte value counts as two).
// The most a cluster reads (settable for measurement: set_histc_cluster_limits).
// Measured on the H100, cluster against the count kernel (NOTES 65, 76):
// dense float32 1 MiB 10.2 vs 12.0 us, 2 MiB 13.0 vs 12.6; strided float64
// 65536 values 9.6 vs 12.0, 131072 12.4 vs 12.5, 262144 18.0 vs 13.9; strided
// float32 90112 values 9.2 vs 11.8 (PyTorch 8.9), 131072 10.2 vs 11.2 (25
// bins) and 10.5 vs 13.3 (339 bins), 262144 13.7 vs 12.1.
std::atomic<int64_t> g_cluster_dense_bytes{int64_t(1) << 20};
std::atomic<int64_t> g_cluster_strided_values{16 * kHistogramClusterBlocks * kHistogramClusterThreads};

// The cluster kernel's dynamic shared memory: `copies` columns of bins + 1
// counters (a spare row for values outside), then one folded row of bins.
int64_t cluster_shared_bytes(int64_t bins, int copies) { return (int64_t(copies) * (bins + 1) + bins) * 4; }

// Columns of counters (a power of two up to a warp's 32 lanes, one per lane
// while they fit): doubled while `bytes` holds them and, for a block that
// zeroes and merges every column itself (`values` >= 0, the values it counts),
// while those values fill at least half of them.
int lane_columns(int64_t bins, int64_t bytes, int64_t values) {
  int copies = 1;
  while (copies < 32 && int64_t(copies) * 2 * (bins + 1) * 4 <= bytes &&
         (values < 0 || int64_t(copies) * 2 * (bins + 1) <= values / 2))
    copies *= 2;
  return copies;
}
std::atomic<int> g_strategy{0};

// Counters in shared memory (the bins' row and a spare one fit beside the
// kernel's own __shared__); otherwise 64-bit atomics in global memory.
bool counts_in_shared_memory(const HistcRequest& r, const DeviceInfo& device) {
  return (r.bins + 1) * 4 + kStaticSharedReserve <= device.shared_per_block_optin && g_strategy != 2;
}

// Whether the count kernel, if it ran, would add each block's counts into out
// (histc_counts_into_out): outputs whose adds of integer counts are exact.
bool count_kernel_could_add_into_out(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r,
                                     const DeviceInfo& device) {
  if (!counts_in_shared_memory(r, device)) return false;
  const bool zeroed_by_memset = !histc_range_is_automatic(x, r);
  if (zeroed_by_memset && out.strides[0] != 1) return false;
  switch (out.dtype) {
    case DType::Float32: return x.numel() <= (int64_t(1) << 24);  // every partial sum an exact float
    case DType::Int32: return x.numel() <= INT32_MAX;
    case DType::Float64:
    case DType::Int64: return true;
    default: return false;  // 16-bit floats round: their counts are summed exactly first, then converted
  }
}

// Values a bin below which one cluster beats the count kernel adding into out
// (H100, NOTES 77): the count kernel's blocks each zero, fold and add every
// bin, the cluster's 8 blocks read every value. Crossovers measured between
// 65 and 330 values a bin (an 8-byte value counting as two).
// (settable for measurement: set_histc_cluster_limits).
std::atomic<int64_t> g_cluster_values_per_bin{256};

// x's explicit range as x's type holds it: floats round to nearest, integers
// truncate toward zero (Scalar.to<int64_t>() in PyTorch), then narrow.
double to_x_type(DType d, double v) {
  unsigned char bytes[16];
  Scalar s;
  s.f = v;
  encode_scalar(d, s, bytes);
  switch (d) {
    case DType::Float16: { uint16_t b; std::memcpy(&b, bytes, 2); return half_bits_to_float(b); }
    case DType::BFloat16: { uint16_t b; std::memcpy(&b, bytes, 2); return bfloat16_bits_to_float(b); }
    case DType::Float32: { float f; std::memcpy(&f, bytes, 4); return f; }
    case DType::Float64: return v;
    case DType::Int8: return double(int8_t(bytes[0]));
    case DType::UInt8: return double(uint8_t(bytes[0]));
    case DType::Int16: { int16_t x; std::memcpy(&x, bytes, 2); return x; }
    case DType::UInt16: { uint16_t x; std::memcpy(&x, bytes, 2); return x; }
    case DType::Int32: { int32_t x; std::memcpy(&x, bytes, 4); return x; }
    case DType::UInt32: { uint32_t x; std::memcpy(&x, bytes, 4); return x; }
    case DType::Int64: { int64_t x; std::memcpy(&x, bytes, 8); return double(x); }
    case DType::UInt64: { uint64_t x; std::memcpy(&x, bytes, 8); return double(x); }
    default: return v;
  }
}

template <int Dims>
HistogramParams<Dims> base_params(const TensorDesc& x, const IterationSpace& s, unsigned long long* scratch,
                                  IndexErrorSlot* error_slot, const TensorDesc& out) {
  HistogramParams<Dims> p{};
  p.x = x.data;
  p.out = out.data;
  p.out_stride = out.strides[0];
  p.out_bytes = out.element_bytes();
  p.scratch = scratch;
  p.error = error_slot;
  p.n = x.numel();
  p.op_code = kOpHistc;
  p.ndim = s.ndim;
  p.global_copies = 1;
  if (Dims > 0)
    for (int d = 0; d < s.ndim; ++d) {
      p.sizes[d] = s.sizes[d];
      p.strides[d] = s.strides[0][d];
    }
  return p;
}

template <int Dims>
void plan_with_dims(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r, const IterationSpace& s,
                    int vec, unsigned long long* scratch, const DeviceInfo& device, IndexErrorSlot* error_slot,
                    std::vector<LaunchPlan>& plans) {
  using F = HistogramSpecFields;
  const int64_t n = x.numel();
  const bool automatic = histc_range_is_automatic(x, r);
  const int64_t items = Dims == 0 ? (n + vec - 1) / vec : n;
  // Tunable: resident blocks per SM ("waves"; the heuristic's 4 fills an SM
  // with the launch bounds' register budget).
  auto resolve = [&](int kind, LaunchPlan& plan) {
    TuningPoint point;
    point.family = KernelFamily::Histogram;
    point.traits = {kind, int(x.dtype), vec, Dims, int(automatic), kind == kHistogramCount ? int(out.dtype) : 0};
    point.bucket = {size_bucket(items), size_bucket(r.bins), 0};
    LaunchTuning heuristic;
    heuristic.threads = kThreads;
    heuristic.unroll = 1;
    // Under 2^20 packs (4 MB of float32), one block per SM: each block's
    // fixed work (zeroing, flushing and merging its counters) outweighs its
    // 16 values a thread (bench --tune at 741ba58: 1.24x on 2^20 values).
    heuristic.waves = items < (int64_t(1) << 20) ? 1 : kHistogramBlocksPerSm;
    plan.tuning = resolve_tuning(point, device, heuristic);
    plan.tunable = true;
    return int64_t(plan.tuning.config.waves);
  };
  auto spec = [&](int kind) {
    KernelSpec k;
    k.family = KernelFamily::Histogram;
    k.fields[F::kKind] = kind;
    k.fields[F::kDType] = int(x.dtype);
    k.fields[F::kOutDType] = kind == kHistogramRange ? 0 : int(out.dtype);  // the kernels that write the counts
    k.fields[F::kVec] = vec;
    k.fields[F::kDims] = Dims;
    k.fields[F::kMaxThreads] = kThreads;
    return k;
  };
  const bool into_out = histc_counts_into_out(x, out, r, device);
  int32_t range_blocks = 0;
  if (automatic) {
    LaunchPlan& plan = plans.emplace_back();
    plan.spec = spec(kHistogramRange);
    const int64_t resident = int64_t(device.sm_count) * resolve(kHistogramRange, plan);
    plan.block[0] = kThreads;
    // One wave: a reduction wants few blocks, each with many loads in flight.
    const int64_t blocks = std::min<int64_t>((items + kThreads * 4 - 1) / (kThreads * 4), resident);
    plan.grid[0] = unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, kHistogramMaxRangeBlocks)));
    range_blocks = int32_t(plan.grid[0]);
    plan.regime = "range: a min/max of ordered keys per block";
    HistogramParams<Dims> range = base_params<Dims>(x, s, scratch, error_slot, out);
    range.bins = int32_t(r.bins);  // the count words it zeroes, or the output's
    range.global_copies = histogram_global_copies(r.bins);
    range.counts_into_out = into_out;
    plan.set_params(range);
  }
  HistogramParams<Dims> p = base_params<Dims>(x, s, scratch, error_slot, out);
  p.bins = int32_t(r.bins);
  p.global_copies = histogram_global_copies(r.bins);
  p.auto_range = automatic;
  p.range_blocks = range_blocks;
  if (!automatic) {
    double lo = to_x_type(x.dtype, r.min), hi = to_x_type(x.dtype, r.max);
    if (lo == hi) {
      lo = to_x_type(x.dtype, lo - 1);
      hi = to_x_type(x.dtype, hi + 1);
    }
    if (is_floating(x.dtype) && (!std::isfinite(lo) || !std::isfinite(hi)))
      throw value_error("max: the range [" + std::to_string(lo) + ", " + std::to_string(hi) + "] in x's dtype " +
                        dtype_info(x.dtype).name + " is not finite");
    p.lo = lo;
    p.hi = hi;
    p.ilo = int64_t(lo);
    p.ihi = int64_t(hi);
  }
  if (histc_in_one_cluster(x, out, r, device)) {
    LaunchPlan& plan = plans.emplace_back();
    plan.spec = spec(kHistogramCluster);
    plan.spec.fields[F::kMaxThreads] = kHistogramClusterThreads;
    plan.block[0] = kHistogramClusterThreads;
    plan.grid[0] = kHistogramClusterBlocks;
    // Beside the folded row; each block counts its share of the values.
    p.copies = lane_columns(r.bins, device.shared_per_block_optin - kStaticSharedReserve - r.bins * 4,
                            n / kHistogramClusterBlocks);
    plan.shared_bytes = unsigned(cluster_shared_bytes(r.bins, p.copies));
    plan.regime = "count: one cluster of 8 blocks, straight to the output";
    plan.set_params(p);
    return;
  }
  // Shared-memory counters, one column per lane while a full SM's worth of
  // blocks still fits (fewer columns for more bins), at least one up to the
  // opt-in limit; beyond it, global atomics.
  const bool single = histc_single_block(x, r, device);
  p.single_block = single;
  p.counts_into_out = into_out;
  LaunchPlan& plan = plans.emplace_back();
  int64_t blocks_per_sm = resolve(kHistogramCount, plan);
  const int64_t bin_bytes = (r.bins + 1) * 4;  // a spare row for the values outside (SharedFloatBinner)
  const int64_t per_block = device.shared_per_sm / blocks_per_sm - 1024;
  const int copies = lane_columns(r.bins, per_block, single ? n : -1);
  const bool shared = counts_in_shared_memory(r, device);
  plan.spec = spec(kHistogramCount);
  plan.block[0] = kThreads;
  if (shared) {
    p.copies = copies;
    plan.shared_bytes = unsigned(int64_t(copies) * bin_bytes);
    blocks_per_sm = std::max<int64_t>(1, std::min<int64_t>(blocks_per_sm, device.shared_per_sm / (plan.shared_bytes + 1024)));
    plan.regime = into_out ? "count: sub-histograms in shared memory, each block's added into the output"
                           : "count: sub-histograms in shared memory";
  } else {
    p.copies = 0;
    plan.regime = "count: global atomics";
  }
  const int64_t cap = int64_t(device.sm_count) * blocks_per_sm;
  plan.grid[0] = single ? 1u : unsigned(std::max<int64_t>(1, std::min<int64_t>((items + kThreads * 4 - 1) / (kThreads * 4), cap)));
  if (single) plan.regime = "count: one block, straight to the output";
  plan.set_params(p);
}

}  // namespace

void set_histogram_strategy(int strategy) { g_strategy = strategy; }
void set_histc_single_block_values(int64_t values) { g_single_block_values = values; }
void set_histc_cluster_limits(int64_t dense_bytes, int64_t strided_values, int64_t values_per_bin) {
  g_cluster_dense_bytes = dense_bytes;
  g_cluster_strided_values = strided_values;
  g_cluster_values_per_bin = values_per_bin;
}

void check_histc(const TensorDesc& x, const HistcRequest& r) {
  const DTypeKind k = dtype_info(x.dtype).kind;
  if (k != DTypeKind::Float && k != DTypeKind::Signed && k != DTypeKind::Unsigned)
    throw type_error(std::string("x: histc supports floating and integer dtypes (got ") + dtype_info(x.dtype).name +
                     ")");
  if (r.bins <= 0 || r.bins > (int64_t(1) << 30))
    throw value_error("bins: expected a positive number of bins up to 2^30 (got " + std::to_string(r.bins) + ")");
  if (!std::isfinite(r.min) || !std::isfinite(r.max))
    throw value_error("min: expected a finite range (got [" + std::to_string(r.min) + ", " + std::to_string(r.max) +
                      "])");
  if (r.min > r.max)
    throw value_error("max: expected max >= min (got min " + std::to_string(r.min) + ", max " + std::to_string(r.max) +
                      ")");
}

// Copies of the global counts: each block adds its sub-histograms into one
// copy, so that 500 blocks do not all queue on the same 100 addresses (about
// 2.5 ns per atomic on one address); up to 4096 words in all.
int histogram_global_copies(int64_t bins) { return int(std::max<int64_t>(1, std::min<int64_t>(32, 4096 / bins))); }

bool histc_counts_into_out(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r,
                           const DeviceInfo& device) {
  return !histc_in_one_launch(x, out, r, device) && count_kernel_could_add_into_out(x, out, r, device);
}

bool histc_range_is_automatic(const TensorDesc& x, const HistcRequest& r) {
  // An empty x has no range to find: PyTorch then widens min == max to
  // [min - 1, max + 1] and counts nothing; so does the explicit path.
  return r.min == r.max && x.numel() > 0;
}

bool histc_single_block(const TensorDesc& x, const HistcRequest& r, const DeviceInfo& device) {
  // Only values one block streams with vector loads (a few 8-byte ones too): a sliced float64 x of 2^15
  // values took 108 us in one block against PyTorch's 9.6 (sweep seed 11), its loads one element at a time.
  // Floating x only: an integer x's binning, 32 values a thread in one block, took 11.2 us for 8192 int32
  // values against the cluster's 8.0 (uint8 15.2 against 11.7; NOTES 87).
  // float64 up to 2048 values: over the 117 dense float64 cases of 2049-8192 values with a range in seeds
  // 100-920, the next plan (mostly the cluster) took 0.85x one block's time (seed 919's 8192 values into 474
  // bins 12.1 -> 7.7 us, PyTorch 8.5; even at 2049-3000 values), and 0.78x over 153 such cases of seeds
  // 921-1800, below PyTorch's time 95 of them before and 7 after (NOTES 97).
  return !histc_range_is_automatic(x, r) && is_floating(x.dtype) && x.numel() <= g_single_block_values.load() &&
         x.is_contiguous() &&
         (x.element_bytes() <= 4 || x.numel() <= 2048) &&
         (r.bins + 1) * 4 + kStaticSharedReserve <= device.shared_per_block_optin && g_strategy != 2;
}

bool histc_in_one_cluster(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r,
                          const DeviceInfo& device) {
  // sm_90's thread-block clusters; an explicit range (an automatic one needs an exchange more, NOTES 29).
  if (device.arch() < 90 || histc_range_is_automatic(x, r) || g_strategy == 2) return false;
  if (histc_single_block(x, r, device)) return false;  // one block is sooner there, at any bins (NOTES 87)
  const int64_t weighted_values = x.numel() * (x.element_bytes() > 4 ? 2 : 1);
  if (x.is_contiguous() ? x.numel() * x.element_bytes() > g_cluster_dense_bytes.load()
                        : weighted_values > g_cluster_strided_values.load())
    return false;
  // The values a bin rule was measured on floating x; an integer x of up to 16384 values (int32, uint8) took
  // 8.0-15.1 us in the cluster against the count kernel's 9.3-38.0 at 10 to 1000 bins (NOTES 87).
  const bool small_integers = !is_floating(x.dtype) && x.numel() <= 16384;
  if (!small_integers && weighted_values >= g_cluster_values_per_bin.load() * r.bins &&
      count_kernel_could_add_into_out(x, out, r, device))
    return false;
  return cluster_shared_bytes(r.bins, 1) + kStaticSharedReserve <= device.shared_per_block_optin;
}

size_t histc_zeroed_words(int64_t bins, bool automatic) {
  return automatic ? 0 : size_t(kHistogramHeaderWords + int64_t(histogram_global_copies(bins)) * bins);
}

size_t histc_scratch_words(int64_t bins) {
  return histc_zeroed_words(bins, false) + 3 * size_t(kHistogramMaxRangeBlocks);
}

void plan_histc(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r, unsigned long long* scratch,
                const DeviceInfo& device, IndexErrorSlot* error_slot, std::vector<LaunchPlan>& plans) {
  IterationSpace s;
  s.operands = 1;
  s.ndim = x.ndim;
  for (int d = 0; d < x.ndim; ++d) {
    s.sizes[d] = x.shape[d];
    s.strides[0][d] = x.strides[d];
  }
  if (x.numel() == 0) {
    s.ndim = 1;
    s.sizes[0] = 0;
    s.strides[0][0] = 1;
  } else {
    collapse(s);
  }
  const int bytes = x.element_bytes();
  if (s.ndim == 1 && s.strides[0][0] == 1) {
    int vec = 16 / bytes;
    while (vec > 1 && reinterpret_cast<uintptr_t>(x.data) % uintptr_t(vec * bytes) != 0) vec /= 2;
    return plan_with_dims<0>(x, out, r, s, vec, scratch, device, error_slot, plans);
  }
  if (s.ndim > kMaxDims)
    throw value_error("x: at most " + std::to_string(kMaxDims) + " dimensions after merging contiguous ones (got " +
                      std::to_string(s.ndim) + ")");
  switch (s.ndim) {
    case 1: return plan_with_dims<1>(x, out, r, s, 1, scratch, device, error_slot, plans);
    case 2: return plan_with_dims<2>(x, out, r, s, 1, scratch, device, error_slot, plans);
    case 3: return plan_with_dims<3>(x, out, r, s, 1, scratch, device, error_slot, plans);
    default: return plan_with_dims<kMaxDims>(x, out, r, s, 1, scratch, device, error_slot, plans);
  }
}

}  // namespace jitops
