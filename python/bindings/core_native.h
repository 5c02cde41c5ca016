// What jitops._torch_autograd's C++ autograd nodes call in jitops._core without
// Python objects: a backward's elementwise product or quotient, described by
// TensorDescs (runtime/tensor_desc.h, a plain struct both modules compile from
// this repository's headers). Exported in the capsule `_core._native_ops`.
// Through CPython, each call cost a few Python tensor objects made and freed
// (mul's backward makes two calls): 10-20 us of a 190 us forward-plus-backward
// call on the H100 hosts (benchmarks/probes/backward_profile_probe.py).
#pragma once
#include <cstddef>

#include "runtime/tensor_desc.h"

namespace jitops {

constexpr int kCoreNativeVersion = 1;

enum CoreNativeBinary : int { kCoreNativeMul = 0, kCoreNativeDiv = 1 };

struct CoreNativeApi {
  int version;  // kCoreNativeVersion
  // out = x * y or x / y, numpy-broadcast into `out` (the caller's: the
  // broadcast shape, the result dtype), queued on `stream` (a CUstream) of
  // x's device. y == nullptr: y is the number `y_number` (`y_integral`: a
  // Python int, held exactly in `y_int`). No GIL needed. Returns 0; 1 when
  // the call must go through Python instead (an error a kernel recorded is
  // pending: the Python path raises it); -1 with a message in `error`.
  int (*binary)(int operation, const TensorDesc* x, const TensorDesc* y, double y_number, bool y_integral,
                int64_t y_int, const TensorDesc* out, void* stream, char* error, size_t error_size);
};

}  // namespace jitops
