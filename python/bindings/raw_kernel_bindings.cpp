// jitops.RawKernel and RawModule's functions, called as CuPy's are:
// kernel(grid, block, args, shared_mem=0, stream=None). Arrays are passed as
// their device pointers; numbers as CuPy types them (bool, int -> int64,
// float -> float64, complex -> complex128, numpy scalars as their dtype). Where
// the driver reports the kernel's parameter sizes, a Python int fits itself to
// a narrower integer parameter (range-checked) and anything else that does not
// fit is refused, rather than launched with bytes the kernel misreads.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "jit/user_source.h"
#include "python/bindings/array_args.h"
#include "python/bindings/device_array.h"
#include "python/bindings/dlpack_abi.h"
#include "python/bindings/fastcall.h"
#include "python/bindings/op_runner.h"
#include "python/bindings/scalar_arg.h"
#include "python/bindings/torch_tensors.h"
#include "runtime/arg_error.h"
#include "runtime/driver_api.h"
#include "runtime/index_errors.h"
#include "runtime/kernel_registry.h"

namespace py = pybind11;

namespace jitops {
namespace {

constexpr int kMaxRawArgs = 64;

struct RawFunction {
  KernelSpec spec;
  std::string name;
};

enum class RawArgType : uint8_t { Array, PythonInt, PythonFloat, Other };

struct RawArgs {
  int count = 0;
  alignas(16) unsigned char values[kMaxRawArgs][16];
  uint8_t sizes[kMaxRawArgs];
  RawArgType types[kMaxRawArgs];
  const char* type_names[kMaxRawArgs];
  int device = -1;
  bool any_torch = false, any_cupy = false;
};

std::string arg_name(int i) { return "args[" + std::to_string(i) + "]"; }

// The device pointer and ordinal of an array argument.
void* array_pointer(PyObject* obj, ArrayKind kind, int i, int* device) {
  switch (kind) {
    case ArrayKind::Torch:
      if (torch_needs_grad(obj))
        throw std::runtime_error(arg_name(i) + ": a raw kernel has no backward, and this tensor requires grad (or "
                                 "carries a forward-mode tangent): pass x.detach(), or call it under "
                                 "torch.no_grad(), if no gradient should flow");
      *device = torch_device(obj);
      if (*device < 0) throw HostOperands();
      return torch_data_ptr(obj);
    case ArrayKind::DeviceArray: {
      const TensorDesc& d = py::handle(obj).cast<const DeviceArray&>().desc();
      *device = d.device;
      return d.data;
    }
    case ArrayKind::CuPy: {  // its MemoryPointer holds both (no Device object made)
      py::object data = py::handle(obj).attr("data");
      *device = data.attr("device_id").cast<int>();
      return reinterpret_cast<void*>(data.attr("ptr").cast<uintptr_t>());
    }
    case ArrayKind::Virtual:
      throw type_error(arg_name(i) + ": a VirtualArray holds no memory to launch on");
    default: {  // JAX and other DLPack producers: the pointer, then the capsule released at once
      py::handle h(obj);
      py::tuple where = h.attr("__dlpack_device__")();
      const int type = where[0].cast<int>();
      if (type == dlpack::kCPU || type == dlpack::kCUDAHost) throw HostOperands();
      *device = where[1].cast<int>();
      py::object cap = h.attr("__dlpack__")();
      auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
      if (!m) throw py::error_already_set();
      PyCapsule_SetName(cap.ptr(), "used_dltensor");
      void* p = static_cast<char*>(m->dl_tensor.data) + m->dl_tensor.byte_offset;
      if (m->deleter) m->deleter(m);  // the caller's array keeps the memory alive
      return p;
    }
  }
}

void parse_argument(PyObject* v, int i, RawArgs& a) {
  unsigned char* out = a.values[i];
  a.types[i] = RawArgType::Other;
  a.type_names[i] = Py_TYPE(v)->tp_name;
  if (PyBool_Check(v)) {
    out[0] = v == Py_True;
    a.sizes[i] = 1;
    return;
  }
  if (PyLong_CheckExact(v) || (PyLong_Check(v) && !is_numpy_scalar(v))) {
    const long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      throw value_error(arg_name(i) + ": a Python int passes as int64, and this one does not fit");
    }
    std::memcpy(out, &x, 8);
    a.sizes[i] = 8;
    a.types[i] = RawArgType::PythonInt;
    return;
  }
  if (PyFloat_CheckExact(v)) {
    const double x = PyFloat_AS_DOUBLE(v);
    std::memcpy(out, &x, 8);
    a.sizes[i] = 8;
    a.types[i] = RawArgType::PythonFloat;
    return;
  }
  if (PyComplex_CheckExact(v)) {
    const Py_complex c = PyComplex_AsCComplex(v);
    std::memcpy(out, &c.real, 8);
    std::memcpy(out + 8, &c.imag, 8);
    a.sizes[i] = 16;
    return;
  }
  const ArrayKind kind = classify(v);
  if (kind == ArrayKind::Host) {
    if (is_numpy_scalar(v)) {  // its own bytes, as its dtype lays them out
      Py_buffer view;
      if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
      const Py_ssize_t n = view.len;
      if (n <= 16) std::memcpy(out, view.buf, size_t(n));
      PyBuffer_Release(&view);
      if (n > 16) throw type_error(arg_name(i) + ": a numpy scalar of at most 16 bytes (got " + std::to_string(n) + ")");
      a.sizes[i] = uint8_t(n);
      return;
    }
    if (PyObject_HasAttrString(v, "__array_interface__") || PyObject_HasAttrString(v, "__array__"))
      throw HostOperands();  // numpy arrays and CPU tensors: copied to the GPU by jitops.raw_kernel
    throw type_error(arg_name(i) + ": expected a device array, a number or a numpy scalar (got " +
                     Py_TYPE(v)->tp_name + ")");
  }
  int device = -1;
  void* p = array_pointer(v, kind, i, &device);
  if (a.device < 0) {
    a.device = device;
  } else if (device != a.device) {
    throw value_error(arg_name(i) + ": expected an array on cuda:" + std::to_string(a.device) +
                      " like the earlier arrays (got cuda:" + std::to_string(device) + ")");
  }
  a.any_torch = a.any_torch || kind == ArrayKind::Torch;
  a.any_cupy = a.any_cupy || kind == ArrayKind::CuPy;
  std::memcpy(out, &p, sizeof(p));
  a.sizes[i] = sizeof(void*);
  a.types[i] = RawArgType::Array;
}

// Checks the arguments against the kernel's parameter sizes; a Python int
// narrows to a smaller integer parameter when its value fits.
void fit_to_parameters(RawArgs& a, const UserModuleInfo& info, const std::string& name) {
  if (!info.param_sizes_known) return;
  if (size_t(a.count) != info.param_sizes.size())
    throw type_error("args: " + name + " takes " + std::to_string(info.param_sizes.size()) + " parameters (got " +
                     std::to_string(a.count) + ")");
  for (int i = 0; i < a.count; ++i) {
    const size_t want = info.param_sizes[size_t(i)];
    if (want == a.sizes[i]) continue;
    if (a.types[i] == RawArgType::PythonInt && (want == 4 || want == 2 || want == 1)) {
      long long x;
      std::memcpy(&x, a.values[i], 8);
      const long long lo = want == 4 ? -(1ll << 31) : want == 2 ? -(1ll << 15) : -(1ll << 7);
      const long long hi = want == 4 ? (1ll << 32) - 1 : want == 2 ? (1ll << 16) - 1 : (1ll << 8) - 1;
      if (x < lo || x > hi)
        throw value_error(arg_name(i) + ": parameter " + std::to_string(i) + " of " + name + " is a " +
                          std::to_string(want * 8) + "-bit integer, and " + std::to_string(x) + " does not fit");
      a.sizes[i] = uint8_t(want);  // little-endian: the low bytes are the narrower integer
      continue;
    }
    std::string hint;
    if (a.types[i] == RawArgType::PythonFloat && want == 4) hint = "; pass numpy.float32(value) for a float parameter";
    if (a.types[i] == RawArgType::Array) hint = "; an array passes as its device pointer";
    throw type_error(arg_name(i) + ": parameter " + std::to_string(i) + " of " + name + " takes " +
                     std::to_string(want) + " bytes, and a " + a.type_names[i] + " passes as " +
                     std::to_string(int(a.sizes[i])) + hint);
  }
}

CUstream launch_stream(PyObject* stream, const RawArgs& a) {
  if (stream && stream != Py_None) {
    py::handle h(stream);
    if (PyLong_Check(stream)) return reinterpret_cast<CUstream>(h.cast<uintptr_t>());
    if (py::hasattr(h, "__cuda_stream__")) return reinterpret_cast<CUstream>(py::tuple(h.attr("__cuda_stream__")())[1].cast<uintptr_t>());
    if (py::hasattr(h, "cuda_stream")) return reinterpret_cast<CUstream>(h.attr("cuda_stream").cast<uintptr_t>());
    if (py::hasattr(h, "ptr")) return reinterpret_cast<CUstream>(h.attr("ptr").cast<uintptr_t>());
    throw type_error(std::string("stream: expected an int handle, a torch.cuda.Stream, a cupy Stream or an object "
                                 "with __cuda_stream__ (got ") + Py_TYPE(stream)->tp_name + ")");
  }
  if (a.any_torch) return torch_current_stream(a.device);
  if (a.any_cupy) {
    PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;  // see fastcall.cpp
    const py::object& current = storage.call_once_and_store_result([] {
      return py::object(py::module_::import("cupy").attr("cuda").attr("get_current_stream"));
    }).get_stored();
    return reinterpret_cast<CUstream>(current().attr("ptr").cast<uintptr_t>());
  }
  return nullptr;
}

const char* const kRawNames[] = {"function", "grid", "block", "args", "shared_mem", "stream"};
const FastSignature kRawLaunch{"raw_launch", kRawNames, 6, 6, 4, false};

py::object raw_launch_body(PyObject* const* p) {
  const RawFunction& fn = py::handle(p[0]).cast<const RawFunction&>();
  unsigned grid[3], block[3];
  launch_dims_arg(p[1], "grid", grid);
  launch_dims_arg(p[2], "block", block);
  if (uint64_t(block[0]) * block[1] * block[2] > 1024)
    throw value_error("block: expected at most 1024 threads a block (got " +
                      std::to_string(uint64_t(block[0]) * block[1] * block[2]) + ")");
  if (block[2] > 64 || grid[1] > 65535 || grid[2] > 65535)
    throw value_error("grid / block: the grid's y and z are at most 65535 and the block's z at most 64");
  const int64_t shared = p[4] && p[4] != Py_None ? int_arg(p[4], "shared_mem") : 0;
  if (shared < 0) throw value_error("shared_mem: expected at least 0 bytes (got " + std::to_string(shared) + ")");
  if (!PyTuple_Check(p[3]) && !PyList_Check(p[3]))
    throw type_error(std::string("args: expected a tuple of the kernel's arguments (got ") + Py_TYPE(p[3])->tp_name + ")");
  py::object keep = py::reinterpret_steal<py::object>(PySequence_Fast(p[3], "args"));
  if (!keep) throw py::error_already_set();
  RawArgs a;
  a.count = int(PySequence_Fast_GET_SIZE(keep.ptr()));
  if (a.count > kMaxRawArgs)
    throw value_error("args: at most " + std::to_string(kMaxRawArgs) + " arguments (got " + std::to_string(a.count) + ")");
  PyObject** items = PySequence_Fast_ITEMS(keep.ptr());
  for (int i = 0; i < a.count; ++i) parse_argument(items[i], i, a);
  const int device = a.device >= 0 ? a.device : 0;
  raise_pending_index_error(device);
  const CUstream stream = launch_stream(p[5], a);
  LoadedKernelRef k = find_loaded(fn.spec, device);
  if (!k) {
    py::gil_scoped_release release;
    k = load_kernel(fn.spec, device);
  }
  fit_to_parameters(a, k->user, fn.name);
  void* params[kMaxRawArgs];
  for (int i = 0; i < a.count; ++i) params[i] = a.values[i];
  const bool sync = index_check_mode() == IndexCheckMode::Sync;
  {
    py::gil_scoped_release release;
    device_context(device).make_current();
    refresh_user_error_slot(*k);
    if (shared + std::max(0, k->resources.shared_bytes) > 48 * 1024)
      JITOPS_CU(driver().cuFuncSetAttribute(k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(shared)),
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    JITOPS_CU(driver().cuLaunchKernel(k->function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                      unsigned(shared), stream, params, nullptr),
              "cuLaunchKernel");
    if (sync) JITOPS_CU(driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
  if (sync) raise_pending_index_error(device);
  return py::none();
}

// A raw launch with numpy arrays goes to jitops.raw_kernel, which copies them
// to the GPU and back around this same entry.
PyObject* raw_launch(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    PyObject* params[16];
    parse_fast_args(kRawLaunch, args, nargs, kwnames, params);
    try {
      return raw_launch_body(params).release().ptr();
    } catch (const HostOperands&) {
      PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;  // see fastcall.cpp
      PyObject* host = storage.call_once_and_store_result([] {
                                return py::object(py::module_::import("jitops.raw_kernel").attr("_launch_on_host"));
                              }).get_stored().ptr();
      return PyObject_Vectorcall(host, args, size_t(nargs), kwnames);
    }
  } catch (...) {
    return translate_current_exception();
  }
}

PyMethodDef g_raw_launch{"raw_launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&raw_launch)),
                         METH_FASTCALL | METH_KEYWORDS,
                         "raw_launch(function, grid, block, args, shared_mem, stream): launches a RawFunction."};

}  // namespace

void bind_raw_kernels(py::module_& m) {
  m.def(
      "user_program",
      [](const std::string& name, const std::string& code, bool with_tensor_header, std::vector<std::string> options,
         std::vector<std::string> name_expressions) {
        UserProgram p;
        p.name = name;
        p.code = code;
        p.with_tensor_header = with_tensor_header;
        p.options = std::move(options);
        p.name_expressions = std::move(name_expressions);
        return register_user_program(p);
      },
      py::arg("name"), py::arg("code"), py::arg("with_tensor_header"), py::arg("options"), py::arg("name_expressions"),
      "Registers a user's program (or finds it by content); returns its id.");
  py::class_<RawFunction>(m, "RawFunction")
      .def(py::init([](int program, int function, std::string name) {
             return RawFunction{user_kernel_spec(program, function), std::move(name)};
           }),
           py::arg("program"), py::arg("function"), py::arg("name"))
      .def_readonly("name", &RawFunction::name)
      .def(
          "describe",
          [](const RawFunction& f, int arch) { return describe_prepared(f.spec, arch); }, py::arg("arch"),
          "The function's module compiled for `arch` (no GPU needed): source, PTX, CUBIN, resources.")
      .def(
          "load",
          [](const RawFunction& f, int device) {
            LoadedKernelRef k;
            {
              py::gil_scoped_release release;
              k = load_kernel(f.spec, device);
            }
            py::dict d;
            d["registers"] = k->resources.registers;
            d["shared_bytes"] = k->resources.shared_bytes;
            d["local_bytes"] = k->resources.local_bytes;
            d["max_threads"] = k->resources.max_threads;
            d["param_sizes"] = k->user.param_sizes;
            return d;
          },
          py::arg("device"), "Compiles (or finds) and loads the function on `device`; its attributes.");
  add_fastcall(m, &g_raw_launch);
}

}  // namespace jitops
