// An element's bits as the unsigned integer of its width, and back: the word
// a compare-and-swap or an integer reduction works on.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace jitops {

template <typename T> struct Bits;
template <> struct Bits<signed char> { typedef unsigned char type; };
template <> struct Bits<unsigned char> { typedef unsigned char type; };
template <> struct Bits<short> { typedef unsigned short type; };
template <> struct Bits<__half> { typedef unsigned short type; };
template <> struct Bits<__nv_bfloat16> { typedef unsigned short type; };
template <> struct Bits<int> { typedef unsigned int type; };
template <> struct Bits<float> { typedef unsigned int type; };
template <> struct Bits<long long> { typedef unsigned long long type; };
template <> struct Bits<double> { typedef unsigned long long type; };

template <typename T>
__device__ __forceinline__ typename Bits<T>::type bits_of(T v) {
  typename Bits<T>::type b;
  memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
__device__ __forceinline__ T from_bits(typename Bits<T>::type b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}

}  // namespace jitops
