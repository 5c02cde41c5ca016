// cp.async (sm_80 on): copies from global into shared memory that hold no register while in flight, so a
// block can have its whole staging area on the way at once. Elements of 4, 8 or 16 bytes (the sizes the
// instruction takes), each aligned to its size at both ends.
#pragma once

namespace jitops {

template <int Bytes>
__device__ __forceinline__ void copy_async(void* shared_dst, const void* global_src) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  const unsigned dst = unsigned(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(global_src), "n"(Bytes));
}

// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `Pending` committed groups of this thread are still in flight (then a barrier makes
// every thread's copies visible to the block).
template <int Pending>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

}  // namespace jitops
