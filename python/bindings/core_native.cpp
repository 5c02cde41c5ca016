// jitops._core._native_ops: the capsule of core_native.h.
#include "python/bindings/core_native.h"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>

#include "jit/elementwise_source.h"
#include "jitops/scatter_params.h"
#include "runtime/device_context.h"
#include "runtime/index_errors.h"
#include "runtime/kernel_registry.h"
#include "runtime/launch.h"
#include "runtime/ops/elementwise_plan.h"
#include "runtime/ops/gather_ops.h"
#include "runtime/ops/row_sum_plan.h"
#include "runtime/ops/scatter_ops.h"
#include "runtime/ops/upsample_ops.h"
#include "runtime/promotion.h"
#include "runtime/scalar.h"
#include "runtime/tuning.h"

namespace py = pybind11;

namespace jitops {
namespace {

std::atomic<uint64_t> g_native_launches{0};  // tests check that a backward took these entries

// What every entry does around its plans: defer to Python while an error a
// kernel recorded is pending (it raises it), report exceptions in `error`.
template <class Body>
int guarded(int device, char* error, size_t error_size, Body body) {
  try {
    const volatile IndexErrorSlot* slot = device_context(device).error_slot_host();
    if (slot->flag != 0) return 1;
    return body();
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s", e.what());
    return -1;
  }
}

void run(const LaunchPlan* plans, int count, int device, void* stream) {
  for (int i = 0; i < count; ++i) {
    LoadedKernelRef k = find_loaded(plans[i].spec, device);
    if (!k) k = load_kernel(plans[i].spec, device);
    device_context(device).make_current();
    launch(plans[i], *k, static_cast<CUstream>(stream));
  }
  g_native_launches.fetch_add(1, std::memory_order_relaxed);
}

// The slot index kernels report into; synchronous checks (the Python path
// waits and raises) take Python.
bool index_slot(int device, IndexErrorSlot*& slot) {
  const IndexCheckMode mode = index_check_mode();
  slot = mode == IndexCheckMode::Off ? nullptr : device_context(device).error_slot_device();
  return mode != IndexCheckMode::Sync;
}

int native_binary(int operation, const TensorDesc* x, const TensorDesc* y, double y_number, bool y_integral,
                  int64_t y_int, const TensorDesc* out, void* stream, char* error, size_t error_size) {
  return guarded(x->device, error, error_size, [&] {
    ElementwiseProblem p;
    p.operation = operation == kCoreNativeDiv ? kEwDiv : operation == kCoreNativeAdd ? kEwAdd
                : operation == kCoreNativeSub ? kEwSub : kEwMul;
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
    const int device = x->device;
    if (plan_elementwise(p, device_context(device).info(), plan)) run(&plan, 1, device, stream);
    return 0;
  });
}

int native_binary_gradients(int operation, const TensorDesc* g, const TensorDesc* x, const TensorDesc* y,
                            const TensorDesc* gx, const TensorDesc* gy, void* stream, char* error, size_t error_size) {
  return guarded(g->device, error, error_size, [&] {
    const TensorDesc* operands[] = {g, x, y, gx, gy};
    if (operation != kCoreNativeMul && operation != kCoreNativeDiv) return 1;
    ElementwiseProblem p;
    p.operation = operation == kCoreNativeMul ? kEwMulGradients : kEwDivGradients;
    p.inputs = 3;
    p.outputs = 2;
    for (int k = 0; k < 5; ++k) {
      if (operands[k]->dtype != g->dtype || !is_floating(g->dtype)) return 1;
      p.dtypes[k] = g->dtype;
      p.arrays[k] = operands[k];
    }
    if (gy->ndim != gx->ndim || !std::equal(gx->shape, gx->shape + gx->ndim, gy->shape)) return 1;
    p.ndim = gx->ndim;
    std::copy(gx->shape, gx->shape + gx->ndim, p.shape);
    LaunchPlan plan;
    if (plan_elementwise(p, device_context(g->device).info(), plan)) run(&plan, 1, g->device, stream);
    return 0;
  });
}

int native_select(int kind, const TensorDesc* x, int64_t dim, const TensorDesc* index, const TensorDesc* out,
                  void* stream, char* error, size_t error_size) {
  return guarded(x->device, error, error_size, [&] {
    IndexErrorSlot* slot = nullptr;
    if (!index_slot(x->device, slot)) return 1;
    // The op's own checks (dim, index dtype and shape): a forward's arguments come as the user gave them.
    std::optional<int64_t> axis;
    if (kind == kCoreNativeTake && dim != kCoreNativeFlat) axis = dim;
    const std::vector<int64_t> shape = kind == kCoreNativeAlongDim ? index_select_shape(*x, dim, *index)
                                       : kind == kCoreNativeTake   ? take_shape(*x, *index, axis)
                                                                   : gather_shape(*x, dim, *index);
    if (!std::equal(shape.begin(), shape.end(), out->shape, out->shape + out->ndim)) return 1;
    const GatherProblem problem = kind == kCoreNativeAlongDim ? index_select_problem(*out, *x, dim, *index)
                                  : kind == kCoreNativeTake   ? take_problem(*out, *x, *index, axis)
                                                              : gather_problem(*out, *x, dim, *index);
    LaunchPlan plan;
    if (plan_gather(problem, device_context(x->device).info(), slot, plan)) run(&plan, 1, x->device, stream);
    return 0;
  });
}

int native_add(int kind, const TensorDesc* self, int64_t dim, const TensorDesc* index, const TensorDesc* src,
               void* stream, char* error, size_t error_size) {
  return guarded(self->device, error, error_size, [&] {
    IndexErrorSlot* slot = nullptr;
    if (!index_slot(self->device, slot)) return 1;
    ScatterProblem p = kind == kCoreNativeElementwise
                           ? scatter_problem(*self, dim, *index, *src, kScatterAdd, kOpScatterAdd)
                           : index_add_problem(*self, dim, *index, *src, kScatterAdd, kOpIndexAdd);
    if (kind == kCoreNativeTake) {
      // A wrapped int32 index is formed in int32: past 2^31 the caller wraps it first.
      if (index->element_bytes() == 4 && p.axis_size > INT32_MAX) return 1;
      p.wrap_negative = true;
    }
    const DeviceInfo& device = device_context(self->device).info();
    if (row_sums_considered(p) && row_sum_layout(p, device).applies) return 1;  // scratch: the Python path's
    LaunchPlan plan;
    if (plan_scatter(p, device, slot, plan)) run(&plan, 1, self->device, stream);
    return 0;
  });
}

int native_index_write(const TensorDesc* self, int64_t dim, const TensorDesc* index, const TensorDesc* src,
                       double value, bool value_integral, int64_t value_int, void* stream, char* error,
                       size_t error_size) {
  return guarded(self->device, error, error_size, [&] {
    IndexErrorSlot* slot = nullptr;
    if (!index_slot(self->device, slot)) return 1;
    ScatterProblem p;
    if (src) {
      p = index_add_problem(*self, dim, *index, *src, kScatterCopy, kOpIndexCopy);
    } else {
      Scalar s;
      s.integral = value_integral;
      s.f = value;
      s.i = value_int;
      p = index_fill_problem(*self, dim, *index, s);
    }
    LaunchPlan plan;
    if (plan_scatter(p, device_context(self->device).info(), slot, plan)) run(&plan, 1, self->device, stream);
    return 0;
  });
}

int native_upsample(bool backward, const TensorDesc* in, const TensorDesc* out, const double* scale, void* stream,
                    char* error, size_t error_size) {
  return guarded(in->device, error, error_size, [&] {
    std::optional<std::array<double, 2>> scales;
    if (scale) scales = std::array<double, 2>{scale[0], scale[1]};
    // The geometry from the small side (x, or the input's gradient) to the large one.
    const TensorDesc& small = backward ? *out : *in;
    const TensorDesc& large = backward ? *in : *out;
    std::optional<std::array<int64_t, 2>> size;
    if (!scales) size = std::array<int64_t, 2>{large.shape[2], large.shape[3]};
    const UpsampleGeometry g = upsample_geometry(small.shape[2], small.shape[3], size, scales);
    if (g.out_h != large.shape[2] || g.out_w != large.shape[3]) return 1;  // the Python path says what is wrong
    LaunchPlan plan;
    const DeviceInfo& device = device_context(in->device).info();
    const bool any = backward ? plan_upsample_backward(*in, *out, g, device, plan)
                              : plan_upsample_forward(*in, *out, g, device, plan);
    if (any) run(&plan, 1, in->device, stream);
    return 0;
  });
}

const CoreNativeApi kApi{kCoreNativeVersion, &native_binary, &native_binary_gradients, &native_select, &native_add, &native_index_write,
                         &native_upsample,
                         &autotune_enabled};

}  // namespace

void bind_core_native(py::module_& m) {
  m.attr("_native_ops") =
      py::capsule(static_cast<const void*>(&kApi), "jitops._core._native_ops");
  m.def("_native_launches", [] { return g_native_launches.load(); },
        "Calls made through _native_ops so far (the C++ autograd nodes' backward passes).");
}

}  // namespace jitops
