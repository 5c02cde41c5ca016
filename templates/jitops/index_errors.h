// Where a kernel reports an out-of-range index. The slot lives in mapped
// (page-locked, device-visible) host memory, one per device, so the host reads
// it without a copy. The bad element is never read or written; the kernel
// records the bad index with the lowest position and goes on.
#pragma once
#include "jitops/types.h"

namespace jitops {

// Device memory beside each slot: a lock serializing reports, so that position
// and value always come from one thread (atomics on mapped host memory are not
// atomic over PCIe), and a hint that turns most bad threads away without the
// lock: the highest (epoch << 40 | kPositionMax - position) any thread has
// offered, i.e. the lowest position offered in the slot's current epoch.
struct IndexErrorGuard {
  uint32_t lock;
  uint32_t pad;
  uint64_t hint;  // 0: none yet
};

struct IndexErrorSlot {
  int32_t flag;      // 0: clean; 1: the fields below hold a report
  uint32_t seq;      // odd while a kernel writes the fields (the host retries)
  int32_t op_code;   // which op launched the kernel (see runtime/op_codes.h)
  uint32_t epoch;    // starts at 1; the host adds 1 each time it takes a report
  int64_t position;  // where in the index (flat, C order) the value was read
  int64_t value;     // the offending index, as read from the index tensor
  int64_t bound;     // the size of the indexed dimension
  IndexErrorGuard* guard;
};

#if defined(JITOPS_DEVICE_COMPILE)
// Records (position, value) unless a report with a lower position, or from
// another op, is already there. A null slot means index checks are off.
// Positions are non-negative; histc reports a range at position 0.
__device__ __noinline__ void report_bad_index(IndexErrorSlot* slot, int64_t position, int64_t value, int64_t bound,
                                              int32_t op_code) {
  if (slot == nullptr) return;
  // One lane per warp goes on: the one with the lowest position.
  const unsigned mask = __activemask();
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  int64_t lowest = position;
  unsigned lowest_lane = lane;
  for (unsigned m = mask; m != 0; m &= m - 1) {
    const unsigned l = __ffs(m) - 1;
    const int64_t q = __shfl_sync(mask, (long long)position, l);
    if (q < lowest || (q == lowest && l < lowest_lane)) {
      lowest = q;
      lowest_lane = l;
    }
  }
  if (lowest_lane != lane) return;
  volatile IndexErrorSlot* s = slot;
  IndexErrorGuard* g = slot->guard;
  // A thread offering a position no lower than one already offered in this
  // epoch stops here: that other thread takes the lock and compares.
  const unsigned long long kPositionMax = (1ull << 40) - 1;
  const unsigned long long clamped = position < (long long)kPositionMax ? (unsigned long long)position : kPositionMax;
  const unsigned long long key = ((unsigned long long)(s->epoch & 0xFFFFFFu) << 40) | (kPositionMax - clamped);
  const unsigned long long seen = atomicMax((unsigned long long*)&g->hint, key);
  if ((seen >> 40) == (key >> 40) && seen >= key) return;
#if __CUDA_ARCH__ >= 700
  // Independent thread scheduling (sm_70+): spinning cannot starve the holder.
  while (atomicCAS(&g->lock, 0u, 1u) != 0u) __nanosleep(64);
  __threadfence();
#endif
  if (s->flag == 0 || (s->op_code == op_code && s->bound == bound && position < s->position)) {
    s->seq = s->seq + 1;
    __threadfence_system();
    s->position = position;
    s->value = value;
    s->bound = bound;
    s->op_code = op_code;
    s->flag = 1;
    __threadfence_system();
    s->seq = s->seq + 1;
    __threadfence_system();
  }
#if __CUDA_ARCH__ >= 700
  __threadfence();
  atomicExch(&g->lock, 0u);
#endif
}

// The flat C-order position in the index tensor of iteration unit `linear`
// (params with `sizes`, `ndim` and `index_positions`: the C-order strides of
// the index's own shape laid over the collapsed dims). Only bad indices pay.
// Inlined: a call taking the parameter block by reference would make every
// thread copy it to local memory.
template <typename P>
__device__ __forceinline__ int64_t index_position(const P& p, typename P::Linear linear) {
  constexpr int kDims = sizeof(p.sizes) / sizeof(p.sizes[0]);
  int64_t position = 0;
#pragma unroll
  for (int d = kDims - 1; d >= 0; --d) {
    if (d < p.ndim) {
      typename P::Linear r = linear;
      if (d > 0) linear = p.sizes[d].divmod(linear, r);
      position += (int64_t)r * p.index_positions[d];
    }
  }
  return position;
}
#endif

}  // namespace jitops
