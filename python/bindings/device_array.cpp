#include "python/bindings/device_array.h"

#include "runtime/cuda_error.h"

#include <pybind11/stl.h>

#include <optional>

#include "python/bindings/dlpack_abi.h"
#include "runtime/arg_error.h"
#include "runtime/device_context.h"
#include "runtime/driver_api.h"

namespace py = pybind11;

namespace jitops {
namespace {

struct ExportContext {
  std::shared_ptr<DeviceBuffer> buffer;
  std::vector<int64_t> shape, strides;
  dlpack::ManagedTensor managed;
};

void delete_export(dlpack::ManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); }

void capsule_destructor(PyObject* capsule) {
  // Only a capsule nobody consumed still owns its tensor.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m && m->deleter) m->deleter(m);
  }
}

py::capsule export_dlpack(const DeviceArray& a) {
  auto* ctx = new ExportContext();
  ctx->buffer = a.buffer();
  const TensorDesc& d = a.desc();
  ctx->shape.assign(d.shape, d.shape + d.ndim);
  ctx->strides.assign(d.strides, d.strides + d.ndim);
  const DTypeInfo& info = dtype_info(d.dtype);
  dlpack::Tensor& t = ctx->managed.dl_tensor;
  t.data = d.data;
  t.device = {dlpack::kCUDA, d.device};
  t.ndim = d.ndim;
  t.dtype = {info.dlpack_code, info.bits, 1};
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = &delete_export;
  PyObject* cap = PyCapsule_New(&ctx->managed, "dltensor", &capsule_destructor);
  if (!cap) {
    delete ctx;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

void check_host_buffer(const DeviceArray& a, const py::buffer_info& info, const char* arg) {
  size_t bytes = size_t(info.size) * size_t(info.itemsize);
  if (bytes != a.nbytes())
    throw value_error(std::string(arg) + ": expected a host buffer of " + std::to_string(a.nbytes()) + " bytes (got " +
                      std::to_string(bytes) + ")");
  ssize_t expected = info.itemsize;
  for (ssize_t i = info.ndim - 1; i >= 0; --i) {
    if (info.shape[i] != 1 && info.strides[i] != expected)
      throw value_error(std::string(arg) + ": expected a C-contiguous host array");
    expected *= info.shape[i];
  }
}

}  // namespace

DeviceBuffer::DeviceBuffer(int device, size_t bytes) : device_(device), bytes_(bytes) {
  device_context(device).make_current();
  if (bytes > 0) check_allocation(driver().cuMemAlloc(&ptr_, bytes), bytes, device, "an array", "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ == 0) return;
  std::string why;
  if (!driver_available(&why)) return;
  try {
    device_context(device_).make_current();
    driver().cuMemFree(ptr_);
  } catch (...) {
    // Destructors must not throw; a failing free at exit is harmless.
  }
}

DeviceArray::DeviceArray(int device, std::vector<int64_t> shape, DType dtype) {
  if (shape.size() > size_t(kMaxTensorDims))
    throw value_error("shape: at most " + std::to_string(kMaxTensorDims) + " dimensions");
  desc_.dtype = dtype;
  desc_.device = device;
  desc_.ndim = int(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw value_error("shape: expected non-negative sizes (got " + std::to_string(shape[i]) + ")");
    desc_.shape[i] = shape[i];
  }
  desc_.set_contiguous_strides();
  size_t bytes = size_t(desc_.numel()) * size_t(desc_.element_bytes());
  buffer_ = std::make_shared<DeviceBuffer>(device, bytes);
  desc_.data = buffer_->data();
}

void bind_device_array(py::module_& m) {
  py::class_<DeviceArray>(m, "DeviceArray", "GPU memory owned by jitops, exchanged through DLPack.")
      .def(py::init([](int device, std::vector<int64_t> shape, const std::string& dtype) {
             DType dt;
             if (!dtype_from_name(dtype, &dt)) throw type_error("dtype: unknown dtype (got " + dtype + ")");
             return new DeviceArray(device, std::move(shape), dt);
           }),
           py::arg("device"), py::arg("shape"), py::arg("dtype"))
      .def_property_readonly("shape", [](const DeviceArray& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly("dtype", [](const DeviceArray& a) { return dtype_info(a.desc().dtype).name; })
      .def_property_readonly("device", [](const DeviceArray& a) { return a.desc().device; })
      .def_property_readonly("nbytes", &DeviceArray::nbytes)
      .def_property_readonly("data_ptr", [](const DeviceArray& a) { return reinterpret_cast<uintptr_t>(a.desc().data); })
      .def(
          "__dlpack__",
          [](DeviceArray& a, py::object stream, py::kwargs) {
            // The consumer reads on `stream`; work jitops queued elsewhere must be done first.
            if (!stream.is_none() && a.last_stream != 0) {
              int64_t s = stream.cast<int64_t>();  // -1: the consumer asks for no synchronization
              uintptr_t consumer = (s == 1 || s == 2) ? 0 : uintptr_t(s);
              if (s != -1 && consumer != a.last_stream) {
                device_context(a.desc().device).make_current();
                JITOPS_CU(driver().cuStreamSynchronize(reinterpret_cast<CUstream>(a.last_stream)),
                          "cuStreamSynchronize");
              }
            }
            return export_dlpack(a);
          },
          py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const DeviceArray& a) { return py::make_tuple(int(dlpack::kCUDA), a.desc().device); })
      .def(
          "copy_from_host",
          [](DeviceArray& a, py::buffer host) {
            py::buffer_info info = host.request();
            check_host_buffer(a, info, "host");
            if (a.nbytes() == 0) return;
            device_context(a.desc().device).make_current();
            JITOPS_CU(driver().cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(a.desc().data), info.ptr, a.nbytes()),
                      "cuMemcpyHtoD");
          },
          py::arg("host"), "Copies a C-contiguous host buffer of the same size in.")
      .def(
          "copy_to_host",
          [](const DeviceArray& a, py::buffer host) {
            py::buffer_info info = host.request(true);
            check_host_buffer(a, info, "host");
            if (a.nbytes() == 0) return;
            device_context(a.desc().device).make_current();
            if (a.last_stream != 0)
              JITOPS_CU(driver().cuStreamSynchronize(reinterpret_cast<CUstream>(a.last_stream)), "cuStreamSynchronize");
            JITOPS_CU(driver().cuMemcpyDtoH(info.ptr, reinterpret_cast<CUdeviceptr>(a.desc().data), a.nbytes()),
                      "cuMemcpyDtoH");
          },
          py::arg("host"), "Copies into a writable C-contiguous host buffer of the same size.")
      .def("__repr__", [](const DeviceArray& a) {
        std::string s = "jitops.DeviceArray(shape=(";
        for (int i = 0; i < a.desc().ndim; ++i) s += std::to_string(a.desc().shape[i]) + (i + 1 < a.desc().ndim || a.desc().ndim == 1 ? "," : "");
        return s + "), dtype=" + dtype_info(a.desc().dtype).name + ", device=cuda:" + std::to_string(a.desc().device) + ")";
      });

  py::class_<VirtualArray>(m, "VirtualArray", "A shape and dtype with no memory, for explain().")
      .def(py::init([](std::vector<int64_t> shape, const std::string& dtype, std::optional<std::vector<int64_t>> strides,
                       uintptr_t address) {
             DType dt;
             if (!dtype_from_name(dtype, &dt)) throw type_error("dtype: unknown dtype (got " + dtype + ")");
             if (shape.size() > size_t(kMaxTensorDims)) throw value_error("shape: too many dimensions");
             if (strides && strides->size() != shape.size())
               throw value_error("strides: expected one stride per dimension (got " + std::to_string(strides->size()) + ")");
             auto* v = new VirtualArray();
             v->desc.dtype = dt;
             v->desc.ndim = int(shape.size());
             for (size_t i = 0; i < shape.size(); ++i) v->desc.shape[i] = shape[i];
             v->desc.set_contiguous_strides();
             if (strides)
               for (size_t i = 0; i < shape.size(); ++i) v->desc.strides[i] = (*strides)[i];
             // A stand-in address: alignment decides vector widths, so it is settable.
             v->desc.data = reinterpret_cast<void*>(address);
             v->desc.device = -1;
             return v;
           }),
           py::arg("shape"), py::arg("dtype"), py::arg("strides") = py::none(), py::arg("address") = 256)
      .def_property_readonly("shape", [](const VirtualArray& v) {
        return py::tuple(py::cast(std::vector<int64_t>(v.desc.shape, v.desc.shape + v.desc.ndim)));
      })
      .def_property_readonly("dtype", [](const VirtualArray& v) { return dtype_info(v.desc.dtype).name; });
}

}  // namespace jitops
