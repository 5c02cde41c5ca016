#include "runtime/ops/upsample_tiles_plan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

#include "jit/upsample_source.h"
#include "jitops/upsample_params.h"
#include "runtime/tuning.h"

namespace jitops {
namespace {

enum : int { kN = 0, kC = 1, kH = 2, kW = 3 };

std::atomic<bool> g_tiles_on{true};
std::atomic<int> g_min_row_bytes{256};
std::atomic<int> g_min_tile_bytes{2048};

// The most output-gradient rows (or columns) the windows of n consecutive
// input-gradient rows cover, of `out`, where there are `size`. Exact edges
// give ceil(n * scale); an edge ceil(float(i * scale)) comes out one below
// where the product rounds down onto an integer, which widens a span by at
// most half an ulp of the largest product (none for an integer scale whose
// products are exact).
int64_t covered(int64_t n, float scale, int64_t size, int64_t out) {
  const double s = scale, top = double(size) * s;
  const double slack = s == std::floor(s) && top < double(1 << 24) ? 0 : top * std::ldexp(1.0, -24);
  return std::min<int64_t>(out, int64_t(std::ceil(double(n) * s + slack)));
}

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The largest v in [1, hi] with fits(v) (fits is monotone), or 0.
template <typename F>
int64_t largest(int64_t hi, F fits) {
  int64_t lo = 0;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid; else hi = mid - 1;
  }
  return lo;
}

struct TileShape {
  int64_t rows = 0, cols = 0;  // input-gradient rows and W positions of a tile (rows 0: none fits)
  int64_t stage_rows = 0;      // output-gradient rows staged
  int64_t pitch = 0;           // elements between staged rows
  bool one_span = false;
  int64_t col_chunks = 0;  // tiles along W
  int64_t tiles = 0;   // tiles in the problem
  int64_t shared = 0;  // shared memory a block: the index tables and the staged rows
};

// The tile with the most rows whose staged rows fit `budget` bytes: whole rows
// (one span where they follow each other in memory, `rows_follow`); where not
// one whole row fits, one row by as many W positions as fit. A staged row
// holds its span plus the misalignment of its first element (under 16 bytes).
TileShape choose_tile(const UpsampleGeometry& g, int64_t channels, int bytes, bool rows_follow, int64_t budget) {
  const int64_t vec = 16 / bytes, run = g.out_w * channels;
  auto pitch_of = [&](int64_t cols) {
    return round_up(covered(cols, g.backward_scale_w, g.in_w, g.out_w) * channels + vec - 1, vec);
  };
  TileShape t;
  t.one_span = rows_follow;
  t.cols = g.in_w;
  t.pitch = rows_follow ? run : pitch_of(g.in_w);
  auto rows_fit = [&](int64_t rows) {
    const int64_t staged = covered(rows, g.backward_scale_h, g.in_h, g.out_h) * t.pitch + (t.one_span ? vec : 0);
    return staged * bytes <= budget;
  };
  t.rows = largest(g.in_h, rows_fit);
  if (t.rows == 0) {  // rows too wide: chunks of W positions, one row a tile
    const int64_t stage_rows = covered(1, g.backward_scale_h, g.in_h, g.out_h);
    t.one_span = false;
    t.cols = largest(g.in_w, [&](int64_t cols) { return stage_rows * pitch_of(cols) * bytes <= budget; });
    if (t.cols > 4) t.cols -= t.cols % 4;  // chunks keep 4-byte items of narrow types aligned
    t.rows = t.cols > 0 ? 1 : 0;
    t.pitch = pitch_of(t.cols);
  }
  return t;
}

constexpr int64_t kMaxBudget = 48 << 10;

// The tile a launch of `tuning` stages: the most rows its loads in flight fill
// (never under 8 KiB, never past 48 KiB), then fewer rows where the grid
// would not make 6 waves of resident blocks; its tile count and shared memory.
TileShape size_tile(const UpsampleGeometry& g, int64_t channels, int bytes, bool rows_follow, int64_t outer,
                    const LaunchTuning& tuning, const DeviceInfo& device) {
  const int64_t budget = std::clamp<int64_t>(int64_t(tuning.threads) * tuning.unroll * 16, 8 << 10, kMaxBudget);
  TileShape t = choose_tile(g, channels, bytes, rows_follow, budget);
  if (t.rows == 0) t = choose_tile(g, channels, bytes, rows_follow, kMaxBudget);
  t.col_chunks = (g.in_w + t.cols - 1) / t.cols;
  auto tiles_of = [&](int64_t rows) { return outer * ((g.in_h + rows - 1) / rows) * t.col_chunks; };
  const int64_t vec = 16 / bytes;
  auto shared_of = [&](int64_t rows) {
    const int64_t stage_rows = covered(rows, g.backward_scale_h, g.in_h, g.out_h);
    const int64_t tables = round_up(4 * (rows + t.cols + 2 + stage_rows), 16);  // as the kernel lays them out
    return tables + (stage_rows * t.pitch + (t.one_span ? vec : 0)) * bytes;
  };
  // A block stages, waits, then sums: blocks overlap one another, not their
  // own phases, so the grid is kept to several waves of resident blocks (a
  // last, partial wave then costs little): fewer rows a tile where it is not.
  auto waves_of = [&](int64_t rows) {
    const int64_t resident = std::max<int64_t>(
        1, std::min<int64_t>(device.max_threads_per_sm / tuning.threads, device.shared_per_sm / (shared_of(rows) + 1024)));
    return double(tiles_of(rows)) / double(resident * device.sm_count);
  };
  t.rows = std::min(t.rows, std::max<int64_t>(1, (int64_t(1) << 24) / (t.cols * channels)));  // H downscaled far
  t.rows = std::max<int64_t>(1, largest(t.rows, [&](int64_t rows) { return waves_of(rows) >= 6; }));
  t.stage_rows = covered(t.rows, g.backward_scale_h, g.in_h, g.out_h);
  t.tiles = tiles_of(t.rows);
  t.shared = shared_of(t.rows);
  return t;
}

}  // namespace

int widest_window(float scale, int64_t size) {
  if (double(size) * double(scale) >= double(1 << 24)) return 0;
  const int64_t w = covered(1, scale, size, int64_t(1) << 40);
  return w <= 4 ? int(std::max<int64_t>(w, 1)) : 0;
}

bool set_upsample_tiles(bool on) { return g_tiles_on.exchange(on); }
int set_upsample_tile_min_row_bytes(int bytes) { return g_min_row_bytes.exchange(bytes); }
int set_upsample_tile_min_bytes(int bytes) { return g_min_tile_bytes.exchange(bytes); }

template <int Bits>
bool plan_upsample_tiles(const TensorDesc& go, const TensorDesc& gi, const UpsampleGeometry& g,
                         const DeviceInfo& device, LaunchPlan& plan) {
  using F = UpsampleSpecFields;
  typedef typename UpsampleTileParams<Bits>::Divider D;
  typedef typename UpsampleTileParams<Bits>::Stride S;
  typedef typename UpsampleTileParams<Bits>::Linear L;
  if (!g_tiles_on.load(std::memory_order_relaxed) || gi.numel() == 0) return false;
  const bool nchw = gi.is_contiguous();
  if (!nchw && !is_channels_last(gi)) return false;
  const int64_t channels = nchw ? 1 : gi.shape[kC];
  const int bytes = gi.element_bytes();
  // Windows one column wide read like a copy in the row kernels; channels-last
  // pixels of 32 bytes or more give their lanes whole sectors already.
  if (!(g.backward_scale_w > 1.0f) || channels * bytes >= 32) return false;
  // Output-gradient rows under 256 bytes stage too little a row to repay the tile's barrier and index
  // work: float16 (1,128,99,31) x1.5 (rows of 92 bytes) took 10.8 us tiled, 5.6 on the row kernels (NOTES 50).
  if (g.out_w * channels * bytes < g_min_row_bytes.load(std::memory_order_relaxed)) return false;
  // 8-byte elements summed over windows of 3x3 or more: the row kernels. Over the 150 float64 sweep
  // backwards of seeds 100-913 sampled (H100, NOTES 94), 3x3 windows (67 plans) ran 1.06x faster there in
  // geomean, 49 by 3% or more (seed 913's (1x16x126x915) x3: 14.5 -> 12.2 us, 0.90x -> 1.07x PyTorch), 6
  // slower; narrower windows even (1.00x-1.02x), and other dtypes' 3x3 windows 0.87x there.
  if (bytes == 8 && widest_window(g.backward_scale_w, g.in_w) >= 3 && widest_window(g.backward_scale_h, g.in_h) >= 3)
    return false;
  // The output gradient's rows: dense, in the input gradient's order.
  if ((g.out_w > 1 && go.strides[kW] != channels) || (channels > 1 && go.strides[kC] != 1)) return false;
  if (reinterpret_cast<uintptr_t>(go.data) % uintptr_t(bytes) != 0) return false;
  if (g.out_w * channels >= (int64_t(1) << 30) || g.in_w * channels >= (int64_t(1) << 30)) return false;

  const bool rows_follow = g.out_h == 1 || go.strides[kH] == g.out_w * channels;
  // Windows too wide to stage even one: the row kernels' loops (decided before the tuning point is
  // resolved, so that a call the row kernels take records no point of this kernel).
  if (choose_tile(g, channels, bytes, rows_follow, kMaxBudget).rows == 0) return false;
  const int64_t outer = nchw ? gi.shape[kN] * gi.shape[kC] : gi.shape[kN];
  LaunchTuning heuristic;
  heuristic.unroll = 4;  // 16-byte loads in flight a thread: 16 KiB staged a tile at 256 threads
  // Tiles of a few rows' worth: the block's tables, barrier and staging cost more than reading the
  // windows straight from the L1 (decided on the heuristic's tile, before the point is resolved, as above).
  // Over 186 tile plans of seeds 100-1900 (H100, NOTES 107), those under 2 KiB of shared memory (43) ran
  // 1.08x faster on the row kernels in geomean, 26 by 3% or more, 8 slower (down to 0.92x); the larger
  // tiles (143) 0.92x there.
  const TileShape planned = size_tile(g, channels, bytes, rows_follow, outer, heuristic, device);
  if (planned.shared < g_min_tile_bytes.load(std::memory_order_relaxed)) return false;
  TuningPoint point;
  point.family = KernelFamily::Upsample;
  point.traits = {kUpsampleTilesBackward, plan.spec.fields[F::kElement], 16 / bytes, Bits, nchw, rows_follow};
  point.bucket = {size_bucket(gi.numel()), size_bucket(g.out_w * channels), 0};
  plan.tuning = resolve_tuning(point, device, heuristic);
  plan.tunable = true;
  const LaunchTuning& tuning = plan.tuning.config;
  const bool as_planned = tuning.threads == heuristic.threads && tuning.unroll == heuristic.unroll;
  const TileShape t = as_planned ? planned : size_tile(g, channels, bytes, rows_follow, outer, tuning, device);
  const int64_t items = t.rows * t.cols * channels, shared = t.shared;
  const int64_t vec = 16 / bytes;
  // Past 48 KiB the launch opts in; the tables of the widest tiles stay far below the device's limit.
  if (shared > device.shared_per_block_optin) return false;
  // Types under 4 bytes sum 4 bytes of consecutive elements an item: the index arithmetic and window
  // edges of an item serve them all and one store writes them (where rows and chunks keep them aligned).
  int per = bytes < 4 ? 4 / bytes : 1;
  while (per > 1 && ((g.in_w * channels) % per || (t.cols * channels) % per ||
                     reinterpret_cast<uintptr_t>(gi.data) % uintptr_t(per * bytes)))
    per /= 2;
  int threads = tuning.threads;
  // Small tiles: fewer idle threads, up to two items a thread, and more blocks resident. A row of 145
  // float32 items on 256 threads took 14.2-15.3 us, on 128 11.1 (PyTorch 12.1; seed 35, NOTES 69).
  // Three items a thread down to 128 threads: float16 tiles of 370 items (2 x 185) took 24.6 us on 256
  // threads, 18.1 on 128 (PyTorch 21.4; seed 44); of 10 such cases on seeds 40-69, 7 gained 9-26% and 3
  // (5.6-7.1 us) moved under 0.2 us. Below 128, two: going on to 64 threads, 5 of 8 cases lost 0.1-3.3 us
  // (NOTES 71).
  auto enough = [&](int t) {
    const int per_thread = t > 128 ? 3 : 2;
    return t / 2 >= (items / per + per_thread - 1) / per_thread;
  };
  while (threads > 64 && enough(threads)) threads /= 2;

  UpsampleTileParams<Bits> p{};
  p.src = go.data;
  p.dst = gi.data;
  p.tiles = L(t.tiles);
  p.col_chunks = D(L(t.col_chunks));
  p.row_blocks = D(L((g.in_h + t.rows - 1) / t.rows));
  p.outer1 = D(L(nchw ? gi.shape[kC] : gi.shape[kN]));
  p.src_outer[0] = nchw ? S(go.strides[kN]) : S(0);
  p.src_outer[1] = S(go.strides[nchw ? kC : kN]);
  p.src_row = S(go.strides[kH]);
  p.channels = FastDivmod(uint32_t(channels));
  p.tile_elems = FastDivmod(uint32_t(t.cols * channels / per));
  p.stage_units = FastDivmod(uint32_t(t.one_span ? 1 : t.pitch / vec));
  p.inner = int32_t(g.in_w * channels);
  p.in_h = int32_t(g.in_h);
  p.in_w = int32_t(g.in_w);
  p.out_h = int32_t(g.out_h);
  p.out_w = int32_t(g.out_w);
  p.tile_rows = int32_t(t.rows);
  p.tile_cols = int32_t(t.cols);
  p.stage_rows = int32_t(t.stage_rows);
  p.pitch = int32_t(t.pitch);
  p.scale_h = g.backward_scale_h;
  p.scale_w = g.backward_scale_w;

  plan.spec.fields[F::kKind] = kUpsampleTilesBackward;
  plan.spec.fields[F::kVec] = int(vec);
  plan.spec.fields[F::kNchwRows] = nchw;
  plan.spec.fields[F::kOneSpan] = t.one_span;
  plan.spec.fields[F::kPerItem] = per;
  plan.spec.fields[F::kWindowH] = widest_window(g.backward_scale_h, g.in_h);
  plan.spec.fields[F::kWindowW] = widest_window(g.backward_scale_w, g.in_w);
  plan.spec.fields[F::kUnroll] = tuning.unroll;
  plan.spec.fields[F::kMaxThreads] = threads;
  plan.regime = nchw ? "tiles of rows of W staged in shared memory (16-byte loads), windows summed there"
                     : "tiles of rows of W x C (channels-last) staged in shared memory (16-byte loads), windows "
                       "summed there";
  plan.block[0] = unsigned(threads);
  plan.grid[0] = grid_blocks(t.tiles, 1, threads, device, tuning.waves);
  plan.shared_bytes = unsigned(shared);
  plan.set_params(p);
  return true;
}

template bool plan_upsample_tiles<32>(const TensorDesc&, const TensorDesc&, const UpsampleGeometry&,
                                      const DeviceInfo&, LaunchPlan&);
template bool plan_upsample_tiles<64>(const TensorDesc&, const TensorDesc&, const UpsampleGeometry&,
                                      const DeviceInfo&, LaunchPlan&);

}  // namespace jitops
