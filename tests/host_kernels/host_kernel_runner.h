// Runs `jitops_kernel` (a specialized source, included before this header)
// on the host: run(params, bytes, grid x, y, block x, y) from Python through ctypes,
// with the parameter block explain() reports, so its pointers are the
// caller's numpy arrays. A template's `extern __shared__` array is to be
// named jitops::host_shared (-D<its name>=host_shared); it starts each block
// filled with 0xff bytes (NaN for floats), so a read never staged shows.
#pragma once
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace jitops {
alignas(16) unsigned char host_shared[1 << 20];
}

namespace host_kernels {

struct Barrier {
  std::mutex m;
  std::condition_variable cv;
  unsigned count = 0, waiting = 0, generation = 0;
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    const unsigned gen = generation;
    if (++waiting == count) {
      waiting = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return gen != generation; });
    }
  }
};
inline Barrier g_barrier;

template <typename P>
int run_kernel(void (*kernel)(P), const void* params, size_t bytes, dim3 grid, dim3 block) {
  if (bytes != sizeof(P)) return 1;
  P p;
  std::memcpy(static_cast<void*>(&p), params, sizeof(P));
  gridDim = grid;
  blockDim = block;
  g_barrier.count = block.x * block.y;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < block.x * block.y; ++t)
    threads.emplace_back([=] {
      threadIdx.x = t % block.x;
      threadIdx.y = t / block.x;
      for (unsigned b = 0; b < grid.x * grid.y; ++b) {
        if (t == 0) std::memset(jitops::host_shared, 0xff, sizeof(jitops::host_shared));
        g_barrier.wait();
        blockIdx.x = b % grid.x;
        blockIdx.y = b / grid.x;
        kernel(p);
        g_barrier.wait();
      }
    });
  for (std::thread& t : threads) t.join();
  return 0;
}

}  // namespace host_kernels

void __syncthreads() { host_kernels::g_barrier.wait(); }

extern "C" int run(const void* params, size_t bytes, unsigned grid_x, unsigned grid_y, unsigned block_x,
                   unsigned block_y) {
  return host_kernels::run_kernel(&jitops_kernel, params, bytes, dim3{grid_x, grid_y, 1}, dim3{block_x, block_y, 1});
}
