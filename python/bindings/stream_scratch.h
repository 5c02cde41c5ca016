// Scratch device memory for one call: allocated and filled on the call's
// stream, freed stream-ordered when the call returns (the kernels queued
// before the free still see it).
#pragma once
#include <cuda.h>

#include "python/bindings/array_args.h"
#include "runtime/cuda_error.h"
#include "runtime/device_context.h"
#include "runtime/driver_api.h"

namespace jitops {

// A scratch buffer of 32-bit words, the first `filled` of them (all, by
// default) set to `fill`, on the call's stream, freed (stream-ordered) when done.
class StreamScratch {
 public:
  StreamScratch(const CallArrays& call, size_t words, unsigned fill, size_t filled = size_t(-1))
      : stream_(call.stream()) {
    device_context(call.device()).make_current();
    check_allocation(driver().cuMemAllocAsync(&ptr_, words * 4, stream_), words * 4, call.device(), "scratch",
                     "cuMemAllocAsync");
    filled = filled < words ? filled : words;
    if (filled) JITOPS_CU(driver().cuMemsetD32Async(ptr_, fill, filled, stream_), "cuMemsetD32Async");
  }
  ~StreamScratch() {
    if (ptr_) driver().cuMemFreeAsync(ptr_, stream_);
  }
  int* data() const { return reinterpret_cast<int*>(ptr_); }
  unsigned long long* keys() const { return reinterpret_cast<unsigned long long*>(ptr_); }

 private:
  CUstream stream_;
  CUdeviceptr ptr_ = 0;
};

// Zeroes `bytes` (a multiple of 4) at `data` on the call's stream: an output
// that kernels then add into.
inline void zero_on_stream(const CallArrays& call, void* data, size_t bytes) {
  device_context(call.device()).make_current();
  if (bytes) JITOPS_CU(driver().cuMemsetD32Async(CUdeviceptr(data), 0u, bytes / 4, call.stream()), "cuMemsetD32Async");
}

}  // namespace jitops
