// What jitops._torch_autograd's C++ autograd nodes call in jitops._core without
// Python objects: a backward's elementwise products, gathers, adds at an index
// and upsampling, described by TensorDescs (runtime/tensor_desc.h, a plain
// struct both modules compile from this repository's headers). Exported in the
// capsule `_core._native_ops`. Through CPython, each call cost a few Python
// tensor objects made and freed and the GIL taken on the autograd engine's
// thread: 10-20 us of a 190 us forward-plus-backward call on the H100 hosts
// (benchmarks/probes/backward_profile_probe.py).
//
// Every entry queues its kernels on `stream` (a CUstream of the operands'
// device) and needs no GIL. It returns 0 when done; 1 when the call must go
// through Python instead (an error a kernel recorded is pending, which the
// Python path raises; synchronous index checks; a plan that needs scratch
// memory); -1 with a message in `error`.
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/tensor_desc.h"

namespace jitops {

constexpr int kCoreNativeVersion = 5;

enum CoreNativeBinary : int { kCoreNativeMul = 0, kCoreNativeDiv = 1, kCoreNativeAdd = 2, kCoreNativeSub = 3 };
// The indexings of select and add: an index along a dim (index_select,
// index_add_), an index of the operand's rank (gather, scatter_add_), or
// numpy.take's (select: along the axis `dim`, or of the flattened operand
// where dim is kCoreNativeFlat; add: along `dim`, its gradient; negative
// indices wrap).
enum CoreNativeIndexing : int { kCoreNativeAlongDim = 0, kCoreNativeElementwise = 1, kCoreNativeTake = 2 };
constexpr int64_t kCoreNativeFlat = INT64_MIN;

struct CoreNativeApi {
  int version;  // kCoreNativeVersion
  // out = x * y, x / y, x + y or x - y, numpy-broadcast into `out` (the caller's: the
  // broadcast shape, the result dtype). y == nullptr: y is the number
  // `y_number` (`y_integral`: a Python int, held exactly in `y_int`).
  int (*binary)(int operation, const TensorDesc* x, const TensorDesc* y, double y_number, bool y_integral,
                int64_t y_int, const TensorDesc* out, void* stream, char* error, size_t error_size);
  // mul's or div's two gradients in one launch (operation kCoreNativeMul or
  // kCoreNativeDiv): gx = g * y and gy = g * x, or gx = g / y and
  // gy = -g * ((x / y) / y); g, x and y numpy-broadcast into gx's and gy's
  // shape (both the broadcast shape); all five of one floating dtype (1
  // otherwise: the caller then makes the gradients apart).
  int (*binary_gradients)(int operation, const TensorDesc* g, const TensorDesc* x, const TensorDesc* y,
                          const TensorDesc* gx, const TensorDesc* gy, void* stream, char* error, size_t error_size);
  // out = index_select(x, dim, index), gather(x, dim, index) or take(x, index, axis=dim), into the
  // caller's `out` of the op's shape and x's dtype (checked: 1 where the
  // arguments do not make that shape, or the op's checks fail).
  int (*select)(int kind, const TensorDesc* x, int64_t dim, const TensorDesc* index, const TensorDesc* out,
                void* stream, char* error, size_t error_size);
  // self.index_add_(dim, index, src) (alpha 1; kind kCoreNativeTake: with
  // negative indices counted from the end) or self.scatter_add_(dim, index,
  // src), atomic (the caller takes the Python path for deterministic=).
  int (*add)(int kind, const TensorDesc* self, int64_t dim, const TensorDesc* index, const TensorDesc* src,
             void* stream, char* error, size_t error_size);
  // self.index_copy_(dim, index, src) (src given) or self.index_fill_(dim,
  // index, value) (src == nullptr; `value_integral`: a Python int, held
  // exactly in `value_int`), in place.
  int (*index_write)(const TensorDesc* self, int64_t dim, const TensorDesc* index, const TensorDesc* src,
                     double value, bool value_integral, int64_t value_int, void* stream, char* error,
                     size_t error_size);
  // upsample_nearest2d (backward false: `in` is x, `out` the result) or its
  // backward (`in` the output's gradient, `out` the input's), with
  // `scale` (h, w) as the op's scale_factor, or nullptr for sizes alone.
  int (*upsample)(bool backward, const TensorDesc* in, const TensorDesc* out, const double* scale, void* stream,
                  char* error, size_t error_size);
  // Whether autotuning is on: a forward then takes the Python entry, which tunes the point its call
  // resolves (these entries leave the request unanswered).
  bool (*autotune_enabled)();
};

}  // namespace jitops
