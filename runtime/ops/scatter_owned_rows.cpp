#include "runtime/ops/scatter_owned_rows.h"

#include <algorithm>
#include <atomic>

#include "jit/scatter_source.h"
#include "jitops/elementwise_tile_params.h"
#include "jitops/scatter_params.h"
#include "runtime/int_math.h"
#include "runtime/op_codes.h"

namespace jitops {
namespace {

std::atomic<int> g_mode{-1};

// A block's rows: up to 96 KB, so that two blocks fit an SM with the opt-in.
constexpr int64_t kMaxRowsBytes = 96 * 1024;
constexpr int kThreads = 256;

// Where it pays (H200, NOTES 117; the sweep's index_add_ plans it fits, with rows of 16 bytes or more and
// 4096 owners or more, timed both ways): fit on 280 plans of seeds 8800-9199, terms at least a row's length
// and at least 16, 2^20 terms in all, elements of 4 or 8 bytes: 38 plans 1.70x faster in geomean, 2 slower
// (the least 0.83x), below PyTorch 15 -> 1; then on 106 plans of seeds 9200-9599, not used for the fit: 12
// taken, 2.10x, one slower (0.94x), below PyTorch 6 -> 0. Fewer terms than a row (each row read and written
// whole for a few updates), under 16 terms a row (the chunk's staging and barriers for little work), small
// calls, and 1- and 2-byte elements (no cp.async for them: staged through registers, 0.53-0.65x) lost.
bool pays(const ScatterProblem& p, int64_t terms, int64_t owners) {
  if (g_mode.load(std::memory_order_relaxed) == 1) return true;
  return p.element_bytes >= 4 && terms >= p.axis_size && terms >= 16 && owners >= 4096 &&
         owners * terms >= (int64_t(1) << 20) && p.axis_size * p.element_bytes >= 16;
}

}  // namespace

int set_owned_rows_mode(int mode) { return g_mode.exchange(mode); }

OwnedRowsLayout owned_rows_layout(const ScatterProblem& p) {
  OwnedRowsLayout l;
  if (g_mode.load(std::memory_order_relaxed) == 0 || p.op != kScatterAdd || p.op_code != kOpIndexAdd || p.counts ||
      p.axis_stride != 1 || p.axis_size < 2)
    return l;
  const IterationSpace& s = p.space;
  // The terms' axis: the one dim self does not move along, where the index alone does (index_add_'s 1-D index)
  int axis = -1;
  for (int d = 0; d < s.ndim; ++d) {
    const bool self_moves = s.strides[kSelfOperand][d] != 0, index_moves = s.strides[kIndexOperand][d] != 0;
    if (index_moves == self_moves || (axis >= 0 && !self_moves)) return l;
    if (!self_moves) axis = d;
  }
  if (axis < 0 || s.ndim < 2) return l;
  const int64_t terms = s.sizes[axis], owners = s.numel() / terms;
  const int pitch = staged_tile_pitch(p.element_bytes, int(std::min<int64_t>(p.axis_size, 1 << 20)));
  const int64_t row_bytes = int64_t(pitch) * p.element_bytes;
  if (32 * row_bytes > kMaxRowsBytes || !pays(p, terms, owners)) return l;
  // Warps a row's destinations are split over: one for every 16 terms (each warp's updates, one after another
  // in shared memory, fewer), up to the block's 8; the other warps take other rows. Rows past the shared memory
  // of 8 warps' worth go to fewer groups of more warps: a block keeps its 256 threads for its copies.
  int row_warps = 1;
  while (row_warps < kThreads / 32 && terms >= int64_t(16) * row_warps) row_warps *= 2;
  int groups = kThreads / 32 / row_warps;
  while (groups > 1 && 32 * groups * row_bytes > kMaxRowsBytes) groups /= 2;
  row_warps = kThreads / 32 / groups;
  // src's chunks staged along its denser dim: the terms', or the owners' innermost
  const int inner = axis == s.ndim - 1 ? s.ndim - 2 : s.ndim - 1;
  const int64_t along_terms = magnitude(s.strides[kSrcOperand][axis]);
  l.src_along_terms = along_terms != 0 && along_terms < magnitude(s.strides[kSrcOperand][inner]);
  l.applies = true;
  l.axis = axis;
  l.row_warps = row_warps;
  l.threads = kThreads;
  l.shared_bytes = unsigned(32 * groups * row_bytes);
  return l;
}

}  // namespace jitops
