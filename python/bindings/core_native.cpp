// jitops._core._native_ops: the capsule of core_native.h.
#include "python/bindings/core_native.h"

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdio>
#include <exception>

#include "jit/elementwise_source.h"
#include "runtime/device_context.h"
#include "runtime/index_errors.h"
#include "runtime/kernel_registry.h"
#include "runtime/launch.h"
#include "runtime/ops/elementwise_plan.h"
#include "runtime/promotion.h"
#include "runtime/scalar.h"

namespace py = pybind11;

namespace jitops {
namespace {

std::atomic<uint64_t> g_native_launches{0};  // tests check that a backward took this entry

int native_binary(int operation, const TensorDesc* x, const TensorDesc* y, double y_number, bool y_integral,
                  int64_t y_int, const TensorDesc* out, void* stream, char* error, size_t error_size) {
  try {
    const int device = x->device;
    const volatile IndexErrorSlot* slot = device_context(device).error_slot_host();
    if (slot->flag != 0) return 1;  // the Python path raises it
    ElementwiseProblem p;
    p.operation = operation == kCoreNativeDiv ? kEwDiv : kEwMul;
    p.inputs = 2;
    p.outputs = 1;
    p.dtypes[0] = x->dtype;
    p.dtypes[2] = out->dtype;
    if (y) {
      p.dtypes[1] = y->dtype;
    } else {  // a number takes the compute type (float32 for 16-bit floats), as the Python path's
      const DType compute = number_compute_type(out->dtype);
      Scalar s;
      s.integral = y_integral;
      s.f = y_number;
      s.i = y_int;
      if (p.operation == kEwDiv) {  // as PyTorch divides by a number: x * (1 / y), as the Python path does
        p.operation = kEwMul;
        s = torch_reciprocal(compute, s);
      }
      p.dtypes[1] = compute;
      p.scalar[1] = true;
      p.scalar_bits[1] = scalar_bits(compute, s);
    }
    p.ndim = out->ndim;
    std::copy(out->shape, out->shape + out->ndim, p.shape);
    p.arrays[0] = x;
    p.arrays[1] = y;
    p.arrays[2] = out;
    LaunchPlan plan;
    if (!plan_elementwise(p, device_context(device).info(), plan)) return 0;
    LoadedKernelRef k = find_loaded(plan.spec, device);
    if (!k) k = load_kernel(plan.spec, device);
    device_context(device).make_current();
    launch(plan, *k, static_cast<CUstream>(stream));
    g_native_launches.fetch_add(1, std::memory_order_relaxed);
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s", e.what());
    return -1;
  }
}

const CoreNativeApi kApi{kCoreNativeVersion, &native_binary};

}  // namespace

void bind_core_native(py::module_& m) {
  m.attr("_native_ops") =
      py::capsule(static_cast<const void*>(&kApi), "jitops._core._native_ops");
  m.def("_native_launches", [] { return g_native_launches.load(); },
        "Launches made through _native_ops so far (C++ autograd nodes' backward products).");
}

}  // namespace jitops
