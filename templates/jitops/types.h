// Fixed-width types and the host/device function marker, usable both by NVRTC
// (which ships no <cstdint>) and by the host C++ that fills kernel parameters.
// Structs built from these have one layout on both sides, so a parameter block
// filled on the host is read unchanged by the kernel.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define JITOPS_DEVICE_COMPILE 1
#endif

#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <cstdint>
#endif

#if defined(JITOPS_DEVICE_COMPILE)
#define JITOPS_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define JITOPS_HOST_DEVICE inline
#endif

namespace jitops {

// The widest collapsed iteration space a kernel accepts (PyTorch allows 25).
constexpr int kMaxDims = 16;

}  // namespace jitops
