// Where a kernel reports an out-of-range index. The slot lives in mapped
// (page-locked, device-visible) host memory, one per device, so the host reads
// it without a copy. The bad element is never read or written; the kernel
// records one offending value and goes on.
#pragma once
#include "jitops/types.h"

namespace jitops {

struct IndexErrorSlot {
  int32_t flag;     // 0: clean; 1: a value below was recorded
  int32_t op_code;  // which op launched the kernel (see runtime/index_errors.h)
  int64_t value;    // one offending index, as read from the index tensor
  int64_t bound;    // the size of the indexed dimension
};

#if defined(JITOPS_DEVICE_COMPILE)
__device__ __noinline__ void report_bad_index(IndexErrorSlot* slot, int64_t value, int64_t bound,
                                              int32_t op_code) {
  volatile IndexErrorSlot* s = slot;
  if (s->flag != 0) return;  // keep the first report the host can see
  s->value = value;
  s->bound = bound;
  s->op_code = op_code;
  __threadfence_system();
  s->flag = 1;
}
#endif

}  // namespace jitops
