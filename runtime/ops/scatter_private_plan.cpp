#include "runtime/ops/scatter_private_plan.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "jit/scatter_source.h"
#include "jitops/scatter_params.h"
#include "runtime/int_math.h"

namespace jitops {
namespace {

constexpr int64_t kMaxCopyBytes = 48 * 1024;  // a block's copy: shared memory without the opt-in
std::atomic<int> g_mode{-1};
std::atomic<int> g_products_mode{-1};

// Bytes of a slot: float for 16-bit floats and int32 for narrow integers (as
// the template's PrivateSum and PrivateProduct), else the element's own width.
int64_t slot_bytes(const ScatterProblem& p) { return p.element_bytes == 8 ? 8 : 4; }

// Where it pays (H100, NOTES 100; sweep plans of seeds 100-3300, both ways):
// a term an element of self (one column, a 1-D index_add_: the space
// collapses to one dim), 32 terms a destination or more, elements of 4 bytes
// or fewer, where the walk's atomics queue on each address in L2. The 52 such
// plans measured: 0.75x the time in geomean, random values 0.58x (seed
// 1817's float16 column of 264029 terms into 1157: 85.2 -> 34.8 us, PyTorch
// 63.6), repeated 0.73x, sorted 1.32x (the walk adds a run once already; an
// int32 column 8.2 -> 13.1 us, PyTorch 17.8), none below PyTorch's time.
// Not taken: fewer terms a destination, where the flush costs more than the
// queues (an int32 column of 9 terms an element: 7.2 -> 10.4 us); rows of
// several elements, which lost to the walk's vector atomics (narrow and
// expanded rows 1.5x slower in geomean); float64 (1.0x) and int64, whose
// native atomics queue less.
bool pays(const ScatterProblem& p, int64_t terms) {
  if (g_mode.load() == 1) return true;
  return p.space.ndim == 1 && p.element_bytes <= 4 && terms >= (int64_t(1) << 15) && terms >= 32 * p.axis_size;
}

// Elements a row of self along which the index stays the same (the space's
// inner dim, dense in self), 1 where there is none.
int64_t row_elements(const IterationSpace& s) {
  const int c = s.ndim - 1;
  return c >= 0 && s.strides[kIndexOperand][c] == 0 && s.strides[kSelfOperand][c] == 1 ? s.sizes[c] : 1;
}

// Products, with the adds' bounds (32 terms a slot, 2^15 terms): each term
// is a compare-and-swap loop on its element, which loses to every other loop
// in flight there. H100, NOTES 110, 132 plans of seeds 100-4399 both ways:
// random values 1.99x in geomean (seed 1894's float64 into (884x2) 322.6 ->
// 124.0 us, PyTorch 280.6), a few repeated ones 17x (seed 1891's bfloat16
// column 4406 -> 62 us, PyTorch 18410), below PyTorch's time 12 -> 0; sorted
// values 0.76x (down to 0.25x: a warp's runs already made one update each,
// and the walk's 2-D layout combined rows; the slowest still 2.2x PyTorch's
// time). Not 16-bit floats in rows of 32 or more, whose walk updates a word
// of two elements at once: 19 such plans 0.70x (seen on the same seeds).
bool products_pay(const ScatterProblem& p, int64_t terms) {
  if (g_products_mode.load() == 1) return true;
  const bool narrow_float = p.element == kElemFloat16 || p.element == kElemBFloat16;
  if (narrow_float && row_elements(p.space) >= 32) return false;
  return terms >= (int64_t(1) << 15) && terms >= 32 * (p.self_hi - p.self_lo + 1);
}

}  // namespace

void set_private_add_mode(int mode) { g_mode = mode; }
int set_private_products_mode(int mode) { return g_products_mode.exchange(mode); }

PrivateAddLayout private_add_layout(const ScatterProblem& p, const DeviceInfo& device) {
  PrivateAddLayout l;
  const bool products = p.op == kScatterMul;
  if (products ? g_products_mode.load() == 0 : (g_mode.load() == 0 || p.op != kScatterAdd)) return l;
  if (p.counts) return l;
  const int64_t span = p.self_hi - p.self_lo + 1;
  const int64_t copy_bytes = span * slot_bytes(p);
  const int64_t terms = p.space.numel();
  if (copy_bytes > kMaxCopyBytes || !(products ? products_pay(p, terms) : pays(p, terms))) return l;
  l.op = products ? kScatterPrivateMul : kScatterPrivateAdd;
  // Each block's copy costs a flush of the whole span: 4 terms a slot at
  // least, but 2048 terms a block (8 a thread) on every SM first, and two
  // blocks an SM at most.
  const int64_t sms = device.sm_count;
  const int64_t floor_blocks = std::min(sms, ceil_div(terms, 2048));
  l.blocks = unsigned(std::clamp<int64_t>(ceil_div(terms, 4 * span), std::max<int64_t>(1, floor_blocks), 2 * sms));
  // Packs where every slot is self's (a contiguous self) and the first is
  // aligned for them: a vector reduction of 16 bytes for floats (sm_90), one
  // compare-and-swap of a word for 8- and 16-bit integers; wider integers
  // have no pack to gain.
  const bool contiguous = span == p.self_numel && !products;  // products flush an element at a time
  const bool is_float = p.element == kElemFloat16 || p.element == kElemBFloat16 || p.element == kElemFloat32 ||
                        p.element == kElemFloat64;
  const int pack_bytes = is_float ? 16 : p.element_bytes <= 2 ? 4 : p.element_bytes;
  for (int v = pack_bytes / p.element_bytes; v > 1 && contiguous; v /= 2) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(p.self) + uintptr_t(p.self_lo * p.element_bytes);
    if (span % v == 0 && first % uintptr_t(v * p.element_bytes) == 0) {
      l.flush_vec = v;
      break;
    }
  }
  l.shared_bytes = unsigned(ceil_div(copy_bytes, 16) * 16);
  l.applies = true;
  return l;
}

}  // namespace jitops
